"""Timers, a measured `tf.matmul` peak, and the FLOPs of the Transformer's matmuls.

Shared by the benchmarks: model FLOPs utilisation (MFU) is the model's matmul FLOP/s divided
by the float32 matmul peak measured in the same process, so both numbers see the same machine
at the same time.
"""

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence

import tensorflow as tf


class Stopwatch:
    """A `time.perf_counter` context manager.

    Example:

    >>> with Stopwatch() as watch:
    ...     work()
    >>> watch.seconds
    0.42
    """

    def __init__(self):
        self.seconds = 0.0
        self._start = None

    def __enter__(self) -> "Stopwatch":
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc_info) -> None:
        self.seconds = time.perf_counter() - self._start


def time_call(function: Callable[[], object]) -> float:
    """Seconds one call of `function` takes (the result is discarded)."""
    with Stopwatch() as watch:
        function()
    return watch.seconds


def summarize_rounds(seconds: Sequence[float]) -> dict[str, float]:
    """The best (smallest) and the median of repeated timings of the same work.

    On a shared machine other processes only ever slow a measurement down, so the best round
    is the least disturbed one; the median is reported beside it to show the spread.
    """
    if not seconds:
        raise ValueError("seconds must hold at least one timing; got none")
    return {"best": min(seconds), "median": statistics.median(seconds)}


def matmul_peak_gflops(size: int = 2048, repeats: int = 8, dtype: str = "float32") -> float:
    """Measures the `tf.matmul` peak in GFLOP/s: best of `repeats` `size x size` products.

    The product runs in a `tf.function` (one warm-up call first); a square product costs
    `2 * size**3` FLOPs.

    Args:
        size: side of the square matrices (2048 fills the matrix units of a CPU).
        repeats: timed calls; the fastest counts.
        dtype: the matrices' dtype.

    Returns:
        The best rate, in GFLOP/s (1e9 FLOP/s).

    Example:

    >>> peak = matmul_peak_gflops(size=512, repeats=3)
    """
    a = tf.random.normal((size, size), dtype=dtype)
    b = tf.random.normal((size, size), dtype=dtype)

    @tf.function
    def product():
        return tf.reduce_sum(tf.matmul(a, b))  # a scalar, so fetching it costs nothing

    product().numpy()
    best = min(time_call(lambda: product().numpy()) for _ in range(repeats))
    return 2.0 * size**3 / best / 1e9


@dataclasses.dataclass(frozen=True)
class TransformerDims:
    """The sizes that set an encoder-decoder Transformer's matmul FLOPs.

    Attributes:
        num_encoder_layers: encoder blocks.
        num_decoder_layers: decoder blocks.
        d_model: model width.
        intermediate_dim: feed-forward inner size (`d_ff`).
        vocabulary_size: size of the output projection.
    """

    num_encoder_layers: int
    num_decoder_layers: int
    d_model: int
    intermediate_dim: int
    vocabulary_size: int


def forward_flops(dims: TransformerDims, batch: int, source_length: int, target_length: int) -> int:
    """Matmul FLOPs of one forward pass over a padded batch (a multiply-add is 2 FLOPs).

    With `B` rows, padded lengths `S` (source) and `T` (target), `d = d_model`,
    `f = d_ff`, `V` the vocabulary and `N_e`, `N_d` the layers:

    - encoder block: Q, K, V, O projections `8 B S d^2`; `Q K^T` and `A V` over all heads
      `4 B S^2 d`; feed-forward `4 B S d f`;
    - decoder block: self-attention `8 B T d^2 + 4 B T^2 d`; cross-attention Q and O
      `4 B T d^2`, K and V over the encoder output `4 B S d^2`, `Q K^T` and `A V`
      `4 B T S d`; feed-forward `4 B T d f`;
    - output projection `2 B T d V`.

    So `forward = N_e (8 B S d^2 + 4 B S^2 d + 4 B S d f)
    + N_d (12 B T d^2 + 4 B S d^2 + 4 B T^2 d + 4 B T S d + 4 B T d f) + 2 B T d V`.
    Attention is counted over the full padded `T x T` and `T x S` products (what the kernels
    compute, causal or not); embedding look-ups, softmax, layer norms and biases are left out.

    Example:

    >>> dims = TransformerDims(3, 3, 256, 1024, 8000)
    >>> forward_flops(dims, batch=64, source_length=24, target_length=24)
    """
    b, s, t = batch, source_length, target_length
    d, f, v = dims.d_model, dims.intermediate_dim, dims.vocabulary_size
    encoder = 8 * b * s * d * d + 4 * b * s * s * d + 4 * b * s * d * f
    decoder = (
        12 * b * t * d * d + 4 * b * s * d * d + 4 * b * t * t * d + 4 * b * t * s * d
    ) + 4 * b * t * d * f
    return dims.num_encoder_layers * encoder + dims.num_decoder_layers * decoder + 2 * b * t * d * v


def training_flops(
    dims: TransformerDims, batch: int, source_length: int, target_length: int
) -> int:
    """FLOPs of one training step: 3x the forward pass (the backward pass costs about 2x).

    Example:

    >>> training_flops(TransformerDims(3, 3, 256, 1024, 8000), 64, 24, 24)
    """
    return 3 * forward_flops(dims, batch, source_length, target_length)


# The smoke tests' model: one layer each side, narrow (tracing cost grows with depth).
SMOKE_MODEL = {
    "num_encoder_layers": 1,
    "num_decoder_layers": 1,
    "d_model": 32,
    "num_heads": 2,
    "intermediate_dim": 64,
}
