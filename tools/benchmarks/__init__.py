"""The benchmarks of `tools/benchmark.py`, outside the installed package: training throughput
against a keras-hub peer, decoding speed, and fault injection.

`tools/benchmark.py` imports them as `benchmarks.*` (the tools folder is its `sys.path[0]`),
the tests as `tools.benchmarks.*`; they import each other relatively. Multi30k is read from
`--data-dir`, else from `$KERAS_ATTENTION_MULTI30K`.
"""

# First, so that Keras loads as the tools load it (keras_attention.core.quiet_import).
import keras_attention  # noqa: F401
