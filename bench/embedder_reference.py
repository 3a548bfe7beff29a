"""ONNX Runtime's own throughput on an embedding model: the reference that
bench/src/bin/embedder_throughput.rs compares engram's embedder with (it runs this script).

    PYTHONPATH=$ENGRAM_MODELS_DIR/ortpy:$ENGRAM_MODELS_DIR/pyref python3 bench/embedder_reference.py \
        --model M --tokenizer T --sentences S.json --threads 2 --batch 32 [--vectors OUT.f32]

Does what engram's embedder does, the same way, so the two figures compare: tokenize every
sentence (truncated to --max-tokens), sort by token count, run batches of --batch sentences each
padded to its longest, mean-pool over the attention mask and L2-normalise. Times that whole loop
(session creation excluded) and prints one JSON line {"sentences": n, "seconds": s}. With
--vectors, writes the vectors, in the order of the sentences, as little-endian float32.
"""

import argparse
import json
import time

import numpy as np
import onnxruntime as ort
import tokenizers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--sentences", required=True, help="a JSON array of strings")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--vectors")
    args = parser.parse_args()

    with open(args.sentences) as f:
        sentences = json.load(f)
    tokenizer = tokenizers.Tokenizer.from_file(args.tokenizer)
    pad_id = (tokenizer.padding or {}).get("pad_id", 0)
    tokenizer.no_padding()
    tokenizer.enable_truncation(args.max_tokens)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    takes_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())

    started = time.perf_counter()
    encodings = tokenizer.encode_batch(sentences)
    order = sorted(range(len(sentences)), key=lambda i: len(encodings[i].ids))
    vectors = np.zeros((len(sentences), 0), np.float32)
    for first in range(0, len(order), args.batch):
        rows = order[first : first + args.batch]
        tokens = max(len(encodings[i].ids) for i in rows)
        ids = np.full((len(rows), tokens), pad_id, np.int64)
        mask = np.zeros((len(rows), tokens), np.int64)
        for r, i in enumerate(rows):
            n = len(encodings[i].ids)
            ids[r, :n] = encodings[i].ids
            mask[r, :n] = encodings[i].attention_mask
        inputs = {"input_ids": ids, "attention_mask": mask}
        if takes_token_types:
            inputs["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, inputs)[0]
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        if vectors.shape[1] == 0:
            vectors = np.zeros((len(sentences), pooled.shape[1]), np.float32)
        vectors[rows] = pooled
    seconds = time.perf_counter() - started

    if args.vectors:
        vectors.astype("<f4").tofile(args.vectors)
    print(json.dumps({"sentences": len(sentences), "seconds": seconds}))


if __name__ == "__main__":
    main()
