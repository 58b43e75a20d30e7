"""The tolerances of the tests' numerical comparisons: one rule, from the dtype.

Two computations of the same function that differ in their kernels (oneDNN or Eigen, AVX2 or
AVX-512, the number of threads, XLA's fusions, another backend) or in their order (a cache
against a full pass, a batch against one row, a float64 reference against float32 layers)
round differently: each sum of `n` terms is off by up to about `sqrt(n)` ulps (`n` at worst)
of its largest term, and the error of a sub-layer passes on to the next one. A tolerance must
therefore scale with the dtype's ulp and with the magnitude of the values, not be a number
tuned to one machine's kernels (an `atol=1e-6` on logits of magnitude 3 is 4 ulps: it failed
on an Intel Xeon). The rule, for `np.testing.assert_allclose` (which allows
`atol + rtol * |expected|`):

    rtol = ULPS[dtype] * eps(dtype)
    atol = ULPS[dtype] * eps(dtype) * max(1, max |expected|)

`eps` is the dtype's machine epsilon (the ulp of 1: 2**-23 for float32, 2**-10 for float16,
2**-7 for bfloat16). `atol` is in units of the largest expected value, not of each element:
an element near zero (a difference of larger terms) carries the rounding of those terms, not
of itself; the magnitudes of these tests' values are about 1 or more (unit-normal inputs,
layer norms, softmax weights), hence the floor of 1.

- **float32**, 64 ulps (`rtol` 7.6e-6): a float32 computation against the float64 NumPy
  reference, or two float32 computations against each other. The tests' reductions are a
  few dozen terms long (`d_model`, the feed-forward width, a vocabulary, a sequence) through
  a few sub-layers and at most a dozen decoding steps. Measured (table below): at most 4.6
  ulps of the magnitude for layer and model outputs, 7.8 for a search's score (a sum of
  log-probabilities), so 64 leaves a margin of 8 to 14. A real bug is far beyond it: against
  the multi-head attention reference, a missing `1/sqrt(d_k)` is 13,000 times the allowance
  and one masked key let through 7,600 times; an output bias off by 0.1% is 15 times.
- **float16, bfloat16**, 8 ulps (`rtol` 7.8e-3 and 6.3e-2): the mixed policies compute
  matrix products and softmax in float32 and round their results to the narrow dtype, so
  the error is a few roundings of that dtype whatever the reduction length; measured at
  most 1.4 ulps.
- **float64**, 64 ulps, for completeness (no test computes in float64 against float64).
- **Weights after Adam updates**, computed two ways (`adam_tolerance`): `ADAM_STEP_FRACTION`
  (1e-3) of the summed learning rates, whatever the dtype. Adam divides each gradient by its
  own root-mean-square, so a weight whose gradient is a difference of larger terms (its
  relative rounding far above an ulp) moves by a step of about the learning rate that the
  rounding shapes: the weights differ in proportion to the rates, not to their own size.
  Measured at most 4.0e-5 of the rates (1.1e-5 of 0.27, oneDNN limited to AVX2, against
  2.1e-6 with the default kernels); the micro-batches' plain mean instead of their token
  shares moves the weights by 0.53. Weights trained by SGD follow the float32 rule.

The default dtype is the coarsest floating dtype of the two arrays compared, and at least
float32 (the tests compute in float32 at best: a float64 array is a reference, or a float32
output that a test widened). A float32 result of a narrower computation (the float32 logits
of a mixed-precision model) names its dtype.

What a tolerance does not cover: a choice between two computations' values. An argmax (a
greedy token, a beam's ranking) of two computations agrees only where the best value beats
the second by more than the tolerance; a test that compares the tokens of two computations
checks that its model has no such near tie (`assert_clear_winner`), so that a few ulps on
another CPU cannot flip a token. The smallest margins found: 0.43 (the protocol's language
model, greedy), 0.22 (its exhaustive beam), 1.0e-2 (the searches' random models, greedy),
5.9e-4 (the CTranslate2 tests' models, greedy), against allowances of 1.4e-5 to 7.5e-5.

Comparisons that are exact by construction stay exact (`assert_array_equal`): integer ids
and masks, the same computation run twice in one process, copies of weights, means taken
in float64.

Measured variation: the largest difference of each class of comparison, in ulps of the
dtype times `max(1, max |expected|)` (Adam: in 1e-5 of the summed learning rates), on an
AMD EPYC with AVX-512, over the audited test files (`-` where a class does not run: the
serving, training and parity tests are TensorFlow's; bfloat16 crashes oneDNN limited to
AVX2 on this CPU). Columns: TensorFlow with oneDNN (the default), with Eigen
(`TF_ENABLE_ONEDNN_OPTS=0`), oneDNN limited to AVX2 (`ONEDNN_MAX_CPU_ISA=AVX2`), one
intra-op thread (`TF_NUM_INTRAOP_THREADS=1`), XLA auto-clustering (`TF_XLA_FLAGS=
"--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"`); JAX (`tools/run_tests.sh`'s `XLA_FLAGS`);
PyTorch (one OpenMP thread).

| comparison | oneDNN | Eigen | AVX2 | 1 thread | XLA | JAX | PyTorch |
|---|---|---|---|---|---|---|---|
| layers against the float64 reference | 3.1 | 4.4 | 3.7 | 3.1 | 3.1 | 3.7 | 2.9 |
| layers, cached or stepwise against a full call | 3.1 | 2.4 | 3.7 | 3.1 | 3.1 | 2.1 | 2.7 |
| the Transformer against its reference, its paths | 3.3 | 3.0 | 2.9 | 3.3 | 3.3 | 4.6 | 3.2 |
| old-format files against their recorded logits | 0.0 | 2.1 | 2.1 | 0.0 | 0.0 | 2.3 | 2.5 |
| saved and reloaded, functional and direct | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
| searches: cached or not, batch or alone | 1.8 | 1.7 | 2.3 | 1.8 | 1.8 | 0.9 | 1.3 |
| search scores against full forward passes | 2.3 | 7.8 | 6.5 | 2.3 | 2.3 | 3.2 | 3.6 |
| SavedModel against the library (scores) | 1.2 | 1.2 | 1.2 | 1.2 | 1.3 | - | - |
| CTranslate2 against ours (log-probabilities) | 1.7 | 1.9 | 2.2 | 1.7 | 1.7 | - | - |
| keras_hub against ours | 0.5 | 0.5 | 0.5 | 0.5 | 0.5 | - | - |
| losses and metrics against float64 | 3.3 | 3.3 | 3.3 | 3.3 | 3.3 | - | - |
| weights after SGD: accumulated, replicas | 1.0 | 1.0 | 0.9 | 1.0 | 1.0 | - | - |
| mixed float16 against float32 (float16 ulps) | 1.1 | 1.1 | 1.1 | 1.1 | 1.1 | 1.1 | 1.1 |
| mixed bfloat16 against float32 (bfloat16 ulps) | 1.0 | 1.4 | - | 1.0 | 1.0 | 1.4 | 0.9 |
| weights after Adam (1e-5 of the rates) | 0.8 | 3.5 | 4.0 | 0.8 | 1.2 | - | - |
"""

from __future__ import annotations

import keras
import ml_dtypes
import numpy as np

EPS = {
    "float64": float(np.finfo(np.float64).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps),
}
ULPS = {"float64": 64, "float32": 64, "float16": 8, "bfloat16": 8}
ADAM_STEP_FRACTION = 1e-3
# Coarsest first: the default dtype of a comparison is the first of these that either side has.
_COARSEST_FIRST = ("bfloat16", "float16", "float32")


def as_array(value: object) -> np.ndarray:
    """A tensor, variable, array or number as a NumPy array of its own dtype."""
    if isinstance(value, keras.Variable):
        value = value.value
    return np.asarray(keras.ops.convert_to_numpy(value))


def comparison_dtype(*values: np.ndarray) -> str:
    """The coarsest floating dtype among `values`, at least float32 (see the module)."""
    names = {str(value.dtype) for value in values}
    return next((name for name in _COARSEST_FIRST if name in names), "float32")


def tolerance(dtype: str = "float32", scale: float = 1.0) -> dict[str, float]:
    """`{"rtol", "atol"}` for `np.testing.assert_allclose` of values of magnitude `scale`
    computed in `dtype` (the module's rule)."""
    name = keras.backend.standardize_dtype(dtype)
    step = ULPS[name] * EPS[name]
    return {"rtol": step, "atol": step * max(1.0, float(scale))}


def magnitude(values: np.ndarray) -> float:
    """The largest finite `|value|` (0 if none)."""
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size else 0.0


def assert_close(actual: object, expected: object, dtype: str | None = None, err_msg: str = ""):
    """`actual` equals `expected` up to the rounding of `dtype` (default: `comparison_dtype`):
    `np.testing.assert_allclose` with `tolerance(dtype, max |expected|)`."""
    actual, expected = as_array(actual), as_array(expected)
    dtype = dtype or comparison_dtype(actual, expected)
    expected = expected.astype(np.float64)
    np.testing.assert_allclose(
        actual.astype(np.float64),
        expected,
        err_msg=err_msg,
        **tolerance(dtype, magnitude(expected)),
    )


def adam_tolerance(learning_rates) -> dict[str, float]:
    """`{"rtol", "atol"}` for weights after Adam updates at `learning_rates` (one per update),
    computed two ways: `ADAM_STEP_FRACTION` of the summed rates (see the module)."""
    return {"rtol": 0.0, "atol": ADAM_STEP_FRACTION * float(sum(learning_rates))}


def assert_clear_winner(values: object, dtype: str = "float32", what: str = "the values") -> None:
    """The largest of `values` (the last axis) beats the second largest by more than the
    tolerance of their magnitude: an argmax over them is the same for any computation that
    agrees within the tolerance (another CPU's kernels, a cache, a batch)."""
    values = as_array(values).astype(np.float64)
    top_two = np.sort(values, axis=-1)[..., -2:]
    margins = top_two[..., 1] - top_two[..., 0]
    limit = tolerance(dtype, magnitude(top_two))["atol"]
    assert np.all(margins > limit), (
        f"a near tie in {what}: the best beats the second by {margins.min():.3g}, within the "
        f"{dtype} tolerance {limit:.3g}, so another CPU's rounding could flip it; choose "
        "another seed or input"
    )
