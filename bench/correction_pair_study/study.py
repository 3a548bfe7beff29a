"""Correction-pair study: does a small pair classifier on MiniLM sentence embeddings link
corrections that ask the same thing in different words much better than cosine?

Embeddings: all-MiniLM-L6-v2 int8 (engram's model), mean-pooled over the attention mask,
L2-normalised, 256-token truncation; computed once by embed.py into $PAIR_STUDY_DIR/emb.npz (default /tmp/correction_pair_study).

Exact formulas (u, v = unit-length 384-d embeddings of the two corrections):
  weights.json (projection, chosen by CV clustering recall; W is 384 x 64, row-major W[i][k]):
      a = W^T u, c = W^T v;  p = 1 / (1 + exp(-(s * a.c / (|a| |c|) + b)))
  weights_linear.json (linear; best on the blind sets, but not chosen by CV):
      f = concat(u * v, |u - v|)   # 768 features, elementwise, symmetric
      p = 1 / (1 + exp(-(w . f + b)))
  MLP (not saved): p = sigmoid(w2 . relu(W1 f + b1) + b2), 32 hidden units
  link iff p >= threshold; average linkage: join the cluster with highest mean p if >= t_avg.
  (all weights are in raw-feature units: no standardisation step.)

Usage: python3 study.py cv      # training sets only: cross-validation, choices printed
       python3 study.py blind   # once: final fits on all training sets, blind aggregates only
Blind sets (e g h i k m): only aggregate precision / recall / counts are ever printed.
"""
import os, sys, json, time
os.environ.setdefault("OMP_NUM_THREADS", "1"); os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

HERE = os.environ.get("PAIR_STUDY_DIR", "/tmp/correction_pair_study")  # embed.py's cache, and outputs
TRAIN = list("abcdfjlno")
BLIND = list("eghikm")
ENGINE = {"e": (0.805, 0.326), "g": (0.748, 0.364), "h": (0.923, 0.653),
          "i": (0.835, 0.514), "k": (0.876, 0.499), "m": (0.782, 0.412)}
OPP_W = 5.0          # weight of opposite-request pairs (hard negatives)
NEG_KEEP = 0.15      # fraction of ordinary negatives kept for training (reweighted 1/NEG_KEEP)
TARGET_P = 0.95

E = np.load(os.path.join(HERE, "emb.npz"))

class Set:
    def __init__(self, s):
        self.name = s
        self.X = E[f"{s}_X"].astype(np.float32); self.y = E[f"{s}_y"]
        R = self.y.max() + 1
        O = np.zeros((R, R), bool)
        for a, b in E[f"{s}_opp"]: O[a, b] = O[b, a] = True
        n = len(self.y)
        self.iu, self.ju = np.triu_indices(n, 1)
        self.same = self.y[self.iu] == self.y[self.ju]
        self.opp = O[self.y[self.iu], self.y[self.ju]]
SETS = {s: Set(s) for s in TRAIN + BLIND}

def pair_feats(X, iu, ju):
    u, v = X[iu], X[ju]
    return np.concatenate([u * v, np.abs(u - v)], 1)

def train_pairs(sets, rng):
    F, Y, W = [], [], []
    for S in sets:
        keep = S.same | S.opp | (rng.random(len(S.same)) < NEG_KEEP)
        iu, ju = S.iu[keep], S.ju[keep]
        F.append(pair_feats(S.X, iu, ju)); Y.append(S.same[keep].astype(np.float32))
        w = np.where(S.same[keep], 1.0, np.where(S.opp[keep], OPP_W, 1.0 / NEG_KEEP))
        W.append(w.astype(np.float32))
    F = np.concatenate(F); Y = np.concatenate(Y); W = np.concatenate(W)
    return F, Y, W / W.mean()

def sig(z): return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))

class Adam:
    def __init__(self, params, lr):
        self.p = params; self.lr = lr; self.t = 0
        self.m = [np.zeros_like(x) for x in params]; self.v = [np.zeros_like(x) for x in params]
    def step(self, grads):
        self.t += 1
        for x, g, m, v in zip(self.p, grads, self.m, self.v):
            m *= 0.9; m += 0.1 * g; v *= 0.999; v += 0.001 * g * g
            x -= self.lr * (m / (1 - 0.9 ** self.t)) / (np.sqrt(v / (1 - 0.999 ** self.t)) + 1e-8)

# ---------------------------------------------------------------- models
class Cosine:
    nparams = 0
    def fit(self, sets, hp, seed=0): return self
    def probs(self, S): return (S.X[S.iu] * S.X[S.ju]).sum(1)

class Linear:
    """logistic regression on f = [u*v, |u-v|]; hp = L2 strength on standardised weights"""
    nparams = 769
    def fit(self, sets, lam, seed=0, iters=500):
        F, Y, W = train_pairs(sets, np.random.default_rng(seed))
        mu = F.mean(0); sd = F.std(0) + 1e-6
        Fs = (F - mu) / sd
        w = np.zeros(F.shape[1], np.float32); b = np.zeros(1, np.float32)
        opt = Adam([w, b], 0.05)
        for _ in range(iters):
            p = sig(Fs @ w + b[0]); r = (p - Y) * W / len(Y)
            opt.step([Fs.T @ r + lam * w, np.array([r.sum()], np.float32)])
        self.w = (w / sd).astype(np.float32); self.b = float(b[0] - (w * mu / sd).sum())
        return self
    def probs(self, S):
        return sig(pair_feats(S.X, S.iu, S.ju) @ self.w + self.b)
    def export(self): return {"kind": "linear", "w": self.w.tolist(), "b": self.b}

class MLP:
    """f -> relu(W1 f + b1) (H units) -> w2 . h + b2; hp = (H, L2, epochs)"""
    def fit(self, sets, hp, seed=0):
        H, lam, epochs = hp
        rng = np.random.default_rng(seed)
        F, Y, W = train_pairs(sets, rng)
        mu = F.mean(0); sd = F.std(0) + 1e-6
        Fs = ((F - mu) / sd).astype(np.float32)
        D = F.shape[1]
        W1 = (rng.standard_normal((D, H)) * np.sqrt(2.0 / D)).astype(np.float32)
        b1 = np.zeros(H, np.float32); w2 = (rng.standard_normal(H) * 0.1).astype(np.float32)
        b2 = np.zeros(1, np.float32)
        opt = Adam([W1, b1, w2, b2], 0.003)
        n = len(Y); bs = 2048
        for ep in range(epochs):
            perm = rng.permutation(n)
            for k in range(0, n, bs):
                idx = perm[k:k + bs]; x = Fs[idx]
                a = x @ W1 + b1; h = np.maximum(a, 0); z = h @ w2 + b2[0]
                r = (sig(z) - Y[idx]) * W[idx] / len(idx)
                gw2 = h.T @ r + lam * w2; gb2 = np.array([r.sum()], np.float32)
                da = np.outer(r, w2) * (a > 0)
                gW1 = x.T @ da + lam * W1; gb1 = da.sum(0)
                opt.step([gW1, gb1, gw2, gb2])
        self.W1 = (W1 / sd[:, None]).astype(np.float32); self.b1 = (b1 - (mu / sd) @ W1).astype(np.float32)
        self.w2 = w2; self.b2 = float(b2[0]); self.nparams = W1.size + H + H + 1
        return self
    def probs(self, S):
        out = np.empty(len(S.iu), np.float32)
        for k in range(0, len(S.iu), 20000):
            f = pair_feats(S.X, S.iu[k:k + 20000], S.ju[k:k + 20000])
            out[k:k + 20000] = sig(np.maximum(f @ self.W1 + self.b1, 0) @ self.w2 + self.b2)
        return out
    def export(self):
        return {"kind": "mlp", "W1": self.W1.tolist(), "b1": self.b1.tolist(),
                "w2": self.w2.tolist(), "b2": self.b2}

class Proj:
    """p = sigmoid(s * cos(W^T u, W^T v) + b), W 384 x K; trained on all pairs of each set
    with a weighted logistic (contrastive) loss; hp = (K, L2, steps)"""
    def fit(self, sets, hp, seed=0):
        K, lam, steps = hp
        rng = np.random.default_rng(seed)
        Q, _ = np.linalg.qr(rng.standard_normal((384, 384)))
        Wm = Q[:, :K].astype(np.float32) * np.sqrt(384 / K)
        sb = np.array([10.0, -7.0], np.float32)
        prep = []
        for S in sets:
            n = len(S.y); R = S.y.max() + 1
            Ymat = (S.y[:, None] == S.y[None, :]).astype(np.float32)
            O = np.zeros((R, R), bool)
            for a, b in E[f"{S.name}_opp"]: O[a, b] = O[b, a] = True
            Wt = np.where(Ymat > 0, 1.0, np.where(O[S.y][:, S.y], OPP_W, 1.0)).astype(np.float32)
            np.fill_diagonal(Wt, 0)
            prep.append((S.X, Ymat, Wt))
        tot = sum(w.sum() for _, _, w in prep)
        opt = Adam([Wm, sb], 0.01)
        for _ in range(steps):
            gW = lam * Wm; gsb = np.zeros(2, np.float32)
            for X, Ymat, Wt in prep:
                Z = X @ Wm; nz = np.linalg.norm(Z, axis=1, keepdims=True) + 1e-8; N = Z / nz
                C = N @ N.T; L = sb[0] * C + sb[1]
                G = (sig(L) - Ymat) * Wt / tot
                gsb += [(G * C).sum(), G.sum()]
                dN = 2 * sb[0] * (G @ N)
                dZ = (dN - N * (N * dN).sum(1, keepdims=True)) / nz
                gW = gW + X.T @ dZ
            opt.step([gW, gsb])
        self.W = Wm; self.s, self.b = float(sb[0]), float(sb[1]); self.nparams = Wm.size + 2
        return self
    def probs(self, S):
        Z = S.X @ self.W; N = Z / (np.linalg.norm(Z, axis=1, keepdims=True) + 1e-8)
        return sig(self.s * (N[S.iu] * N[S.ju]).sum(1) + self.b)
    def export(self): return {"kind": "projection", "W": self.W.tolist(), "s": self.s, "b": self.b}

# ---------------------------------------------------------------- evaluation
def pr(pred, S):
    tp = int((pred & S.same).sum()); P = int(pred.sum()); T = int(S.same.sum())
    return tp, P, T, int((pred & S.opp).sum())

def fmt(tp, P, T, opp):
    return f"P {tp / P if P else 1:.3f} R {tp / T:.3f} (links {P}, opp {opp})"

def thr_for_precision(scores, same, target=TARGET_P):
    """lowest threshold whose pooled precision >= target"""
    o = np.argsort(-scores); s = scores[o]; c = np.cumsum(same[o])
    prec = c / np.arange(1, len(s) + 1)
    ok = np.where(prec >= target)[0]
    if len(ok) == 0: return float(s[0]) + 1e-6
    k = ok.max()
    return float(s[k])

def cluster(S, pvec, t, mode, order):
    n = len(S.y); P = np.zeros((n, n), np.float32); P[S.iu, S.ju] = pvec; P = P + P.T
    lab = -np.ones(n, int)
    if mode == "cc":
        parent = list(range(n))
        def find(a):
            while parent[a] != a: parent[a] = parent[parent[a]]; a = parent[a]
            return a
        for a, b in zip(*np.where(np.triu(P >= t, 1))): parent[find(a)] = find(b)
        lab = np.array([find(a) for a in range(n)])
    else:
        members = []
        for i in order:
            best, bi = -1.0, -1
            for c, m in enumerate(members):
                sc = P[i, m].mean()
                if sc > best: best, bi = sc, c
            if bi >= 0 and best >= t: members[bi].append(i); lab[i] = bi
            else: members.append([i]); lab[i] = len(members) - 1
    return pr(lab[S.iu] == lab[S.ju], S)

def agg(rows):
    return tuple(sum(r[k] for r in rows) for k in range(4))

def make(kind):
    return {"cos": Cosine, "lin": Linear, "mlp": MLP, "proj": Proj}[kind]()

def oof(kind, hp):
    """leave-one-training-set-out predictions (cached in oof/)"""
    os.makedirs(os.path.join(HERE, "oof"), exist_ok=True)
    fn = os.path.join(HERE, "oof", f"{kind}_{hp}.npz".replace(" ", ""))
    if os.path.exists(fn):
        z = np.load(fn); return {s: z[s] for s in TRAIN}
    out = {}
    for v in TRAIN:
        m = make(kind).fit([SETS[s] for s in TRAIN if s != v], hp)
        out[v] = m.probs(SETS[v])
    np.savez(fn, **out)
    return out

def recall_at(scores, same, target):
    o = np.argsort(-scores); c = np.cumsum(same[o]); prec = c / np.arange(1, len(c) + 1)
    ok = np.where(prec >= target)[0]
    return c[ok.max()] / same.sum() if len(ok) else 0.0

def clus_threshold(preds, mode, grid, order_fn, target=TARGET_P):
    best = None
    for t in grid:
        rows = [cluster(SETS[s], preds[s], t, mode, order_fn(SETS[s])) for s in preds]
        tp, P, T, o = agg(rows)
        p = tp / P if P else 1; r = tp / T
        if p >= target and (best is None or r > best[1]): best = (t, r, p)
    return best

file_order = lambda S: np.arange(len(S.y))

HPS = {"cos": [None],
       "lin": [1e-3, 1e-2, 1e-1],
       "mlp": [(32, 1e-4, 10)],
       "proj": [(64, 1e-4, 300)]}

def run_cv(kinds):
    res = {}
    for kind in kinds:
        for hp in HPS[kind]:
            t0 = time.time()
            preds = oof(kind, hp)
            sc = np.concatenate([preds[s] for s in TRAIN]); same = np.concatenate([SETS[s].same for s in TRAIN])
            t = thr_for_precision(sc, same)
            rows = {s: pr(preds[s] >= t, SETS[s]) for s in TRAIN}
            tp, P, T, o = agg(rows.values())
            per = " ".join(f"{s}:{rows[s][0] / max(rows[s][1], 1):.2f}/{rows[s][0] / rows[s][2]:.2f}" for s in TRAIN)
            print(f"[cv] {kind} hp={hp} t={t:.3f} pooled {fmt(tp, P, T, o)}  ({time.time() - t0:.0f}s)")
            print(f"      per set P/R {per}")
            print("      pooled recall at precision " + " ".join(f"{q}:{recall_at(sc, same, q):.3f}" for q in [0.7, 0.8, 0.9, 0.95]))
            res[(kind, str(hp))] = (tp / T, t, hp, preds)
    return res

def main():
    phase = sys.argv[1] if len(sys.argv) > 1 else "cv"
    kinds = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cos", "lin", "mlp", "proj"]
    if phase == "cv":
        res = run_cv(kinds)
        for kind in kinds:
            r, t, hp, preds = max((v for k, v in res.items() if k[0] == kind), key=lambda v: v[0])
            lo = min(float(np.percentile(preds[s], 90)) for s in preds)
            grid = np.unique(np.concatenate([np.linspace(lo, 1, 60), [t]]))
            for mode in ["cc", "avg"]:
                b = clus_threshold(preds, mode, grid, file_order)
                print(f"[cv-cluster] {kind} hp={hp} pair-t={t:.3f} {mode}: "
                      + (f"t={b[0]:.3f} P {b[2]:.3f} R {b[1]:.3f}" if b else "no threshold reaches P>=0.95"))
    elif phase == "choose":
        # picks, per model, the CV-best hp and thresholds (pair and clustering) for P>=0.95 and P>=0.80
        pick = {"cos": None, "lin": 1e-3, "mlp": (32, 1e-4, 10), "proj": (64, 1e-4, 300)}
        out = {}
        for kind, hp in pick.items():
            preds = oof(kind, hp)
            sc = np.concatenate([preds[s] for s in TRAIN]); same = np.concatenate([SETS[s].same for s in TRAIN])
            c = {"hp": hp}
            lo = min(float(np.percentile(preds[s], 95)) for s in preds)
            grid = np.linspace(lo, float(sc.max()), 50)
            for tag, q in [("t", 0.95), ("t80", 0.80)]:
                c[tag] = thr_for_precision(sc, same, q)
                for mode in ["cc", "avg"]:
                    b = clus_threshold(preds, mode, grid, file_order, q)
                    c[f"{tag}_{mode}"] = b[0] if b else None
                    print(f"[choose] {kind} {tag} pair-t={c[tag]:.3f} {mode}: "
                          + (f"t={b[0]:.3f} CV P {b[2]:.3f} R {b[1]:.3f}" if b else f"none reaches P>={q}"))
            out[kind] = c
        out["proj"]["save"] = True  # best CV clustering recall at P>=0.8
        json.dump(out, open(os.path.join(HERE, "choices.json"), "w"), indent=1)
    else:
        cfg = json.load(open(os.path.join(HERE, "choices.json")))
        for kind, c in cfg.items():
            hp = tuple(c["hp"]) if isinstance(c["hp"], list) else c["hp"]
            m = make(kind).fit([SETS[s] for s in TRAIN], hp)
            print(f"== {kind} hp={hp} params={m.nparams} pair-t={c['t']}")
            preds = {s: m.probs(SETS[s]) for s in BLIND}
            if kind == "cos":
                for t in [0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]:
                    rows = {s: pr(preds[s] >= t, SETS[s]) for s in BLIND}
                    print(f"  cos>={t:.2f} combined {fmt(*agg(rows.values()))} | "
                          + " ".join(f"{s}:{rows[s][0] / max(rows[s][1], 1):.2f}/{rows[s][0] / rows[s][2]:.2f}" for s in BLIND))
            for tk in [k for k in c if k.startswith("t") and "_" not in k]:
                rows = {s: pr(preds[s] >= c[tk], SETS[s]) for s in BLIND}
                print(f"  pairs {tk}={c[tk]:.3f} combined {fmt(*agg(rows.values()))}")
                print("     " + " ".join(f"{s}:{rows[s][0] / max(rows[s][1], 1):.3f}/{rows[s][0] / rows[s][2]:.3f}" for s in BLIND))
            for tk in [k for k in c if k.startswith("t") and "_" in k]:
                mode = tk.split("_")[1]; t = c[tk]
                if t is None: continue
                for oname, ofn in [("file", file_order),
                                   ("shuffled", lambda S: np.random.default_rng(7).permutation(len(S.y)))]:
                    if mode == "cc" and oname == "shuffled": continue
                    rows = {s: cluster(SETS[s], preds[s], t, mode, ofn(SETS[s])) for s in BLIND}
                    print(f"  cluster {tk}={t:.3f} ({oname} order) combined {fmt(*agg(rows.values()))}")
                    print("     " + " ".join(f"{s}:{rows[s][0] / max(rows[s][1], 1):.3f}/{rows[s][0] / rows[s][2]:.3f}(opp {rows[s][3]})"
                                             for s in BLIND))
            if "save" in c:
                json.dump(dict(m.export(), threshold=c["t"], cluster_thresholds={k: c[k] for k in c if k.startswith("t")},
                               features="f = concat(u*v, |u-v|) of unit MiniLM embeddings" if kind != "proj" else
                               "p = sigmoid(s * cos(W^T u, W^T v) + b)"),
                          open(os.path.join(HERE, "weights.json"), "w"))

if __name__ == "__main__":
    main()
