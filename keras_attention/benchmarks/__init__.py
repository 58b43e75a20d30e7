"""Benchmarks: training throughput against a keras-hub peer (and, later, decoding speed).

These modules use TensorFlow and keras-hub; importing `keras_attention` does not import them.
The command line is `tools/benchmark.py`.
"""
