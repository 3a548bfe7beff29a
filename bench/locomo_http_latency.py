"""Recall latency through HTTP at LoCoMo's size.

Starts `engram serve` ($ENGRAM_BIN) on loopback with a fresh data folder, posts each LoCoMo
conversation as the LoCoMo job builds its events (jobs/engine/src/locomo/mod.rs), waits until
the views and Lance hold them, then sends each category 1-4 question once to POST /v1/recall at
k=10 (so each recall embeds its question) and prints p50/p95/max in milliseconds.

    ENGRAM_BIN=$CARGO_TARGET_DIR/release/engram python3 bench/locomo_http_latency.py \
        ../shared/locomo/locomo_dev.json [PORT]
"""
import datetime, json, os, secrets, subprocess, sys, tempfile, time, urllib.request
BIN=os.environ['ENGRAM_BIN']; ADMIN='admin-'+secrets.token_hex(16)
data_file=sys.argv[1] if len(sys.argv)>1 else '../shared/locomo/locomo_dev.json'
port=sys.argv[2] if len(sys.argv)>2 else '18787'
tmp=tempfile.TemporaryDirectory(); data=tmp.name
p=subprocess.Popen([BIN,'serve','--http-addr','127.0.0.1:'+port,'--no-demo','--data-dir',data],
    env=dict(os.environ,ENGRAM_ADMIN_KEY=ADMIN,ENGRAM_LOG='warn'),stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
base='http://127.0.0.1:'+port
def req(method,path,body=None,key=None):
    r=urllib.request.Request(base+path,method=method,data=None if body is None else json.dumps(body).encode(),
        headers={'content-type':'application/json',**({'authorization':'Bearer '+key} if key else {})})
    with urllib.request.urlopen(r,timeout=120) as resp: return resp.status,json.loads(resp.read() or b'null')
for _ in range(600):
    try: req('GET','/v1/status'); break
    except Exception: time.sleep(0.5)
else: sys.exit('engram serve did not answer within 300 s')
_,t=req('POST','/v1/admin/tenants',{'tenant':'locomo'},ADMIN); key=t['api_key']
samples=json.load(open(data_file))
def pdate(s):
    return datetime.datetime.strptime(' '.join(s.split()),'%I:%M %p on %d %B, %Y')
for s in samples:
    c=s['conversation']; a,b=c['speaker_a'],c['speaker_b']; evs=[]
    ns=sorted(int(k.split('_')[1]) for k in c if k.startswith('session_') and k.count('_')==1)
    for n in ns:
        start=pdate(c[f'session_{n}_date_time'])
        for i,t in enumerate(c[f'session_{n}']):
            content=f"{t['speaker']}: {t['text']}"
            if t.get('blip_caption'): content+=f" [shares a photo: {t['blip_caption']}]"
            evs.append({'kind':'interaction','event_id':f"{s['sample_id']}:{t['dia_id']}",'tenant':'locomo','user':s['sample_id'],
                'session':f"{s['sample_id']}:session_{n}",'ts':(start+datetime.timedelta(seconds=30*i)).strftime('%Y-%m-%dT%H:%M:%SZ'),
                'role':'user' if t['speaker']==a else 'assistant','content':content,'turn':i})
    for j in range(0,len(evs),200): req('POST','/v1/events',evs[j:j+200],key)
deadline=time.time()+900
while True:
    _,st=req('GET','/v1/status',key=ADMIN)
    if st['views_as_of']>=st['log_end'] and st['pending_episodes']==0: break
    if time.time()>deadline: sys.exit(f'not caught up after 900 s: {st}')
    time.sleep(0.2)
lat=[]
for s in samples:
    for qa in s['qa']:
        if qa.get('category') not in (1,2,3,4): continue
        t=time.perf_counter(); req('POST','/v1/recall',{'user':s['sample_id'],'query':qa['question'],'k':10},key); lat.append((time.perf_counter()-t)*1000)
p.terminate(); p.wait()
lat.sort(); q=lambda f: lat[min(len(lat)-1,int(len(lat)*f+0.999)-1)]
print(f"{len(lat)} recalls through HTTP, k=10: p50 {q(0.5):.1f} ms, p95 {q(0.95):.1f} ms, max {lat[-1]:.1f} ms")
