"""The paper's Table 1, measured: forward time and FLOPs of one layer against the sequence
length `n` at a fixed width `d`, for self-attention, a recurrent layer, a convolution and
restricted self-attention.

Each layer runs as one compiled graph (`tf.function` under TensorFlow), so that the time is
the layer's computation, not Python's dispatch of its operations.

Table 1 gives, per layer: complexity `O(n^2 d)` for self-attention, `O(n d^2)` recurrent,
`O(k n d^2)` convolutional, `O(r n d)` restricted self-attention; sequential operations `O(1)`,
`O(n)`, `O(1)`, `O(1)`; maximum path length `O(1)`, `O(n)`, `O(log_k n)`, `O(n / r)`. So
self-attention is cheaper than a recurrent layer while `n < d`, and the crossover sits near
`n = d`. Here each layer is timed on the same `(1, n, d)` input, and its FLOPs counted by hand
(multiply-adds times 2, the matmuls only):

- self-attention (`MultiHeadAttention`, Q, K, V and output projections included):
  `8 n d^2 + 4 n^2 d`;
- `keras.layers.LSTM(d)`: four gates of `[x, h] W`, `16 n d^2`;
- `keras.layers.Conv1D(d, k, padding="same")`: `2 k n d^2`;
- restricted self-attention, a neighbourhood of `r` on each side (`masks.neighbourhood_mask`):
  the paper's `O(r n d)` needs a banded kernel, which Keras has not, so it is timed with the
  mask on the full score matrix (the same cost as self-attention) and its FLOPs are given as
  the banded kernel's, `8 n d^2 + 4 n (2r + 1) d`.

Example:

>>> rows = measure(lengths=(8, 16), d_model=16, repeats=1)
>>> sorted({row["layer"] for row in rows})
['convolution', 'recurrent (LSTM)', 'restricted self-attention', 'self-attention']
"""

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np

from keras_attention import masks
from keras_attention.layers import MultiHeadAttention
from tools.paper.outputs import write_outputs

# Sequential operations and maximum path length (Table 1), beside the measured figures.
TABLE_1 = {
    "self-attention": ("O(n^2 d)", "O(1)", "O(1)"),
    "recurrent (LSTM)": ("O(n d^2)", "O(n)", "O(n)"),
    "convolution": ("O(k n d^2)", "O(1)", "O(log_k n)"),
    "restricted self-attention": ("O(r n d)", "O(1)", "O(n/r)"),
}


def flops(layer: str, n: int, d: int, kernel_size: int, radius: int) -> float:
    """The layer's matmul FLOPs on one sequence of `n` positions (see the module docstring)."""
    if layer == "self-attention":
        return 8 * n * d * d + 4 * n * n * d
    if layer == "recurrent (LSTM)":
        return 16 * n * d * d
    if layer == "convolution":
        return 2 * kernel_size * n * d * d
    if layer == "restricted self-attention":
        return 8 * n * d * d + 4 * n * (2 * radius + 1) * d
    raise ValueError(f"unknown layer {layer!r}")


def _layers(d: int, heads: int, kernel_size: int, radius: int) -> dict[str, Callable]:
    """Each layer as a function of the input `(1, n, d)`, built on first call (compiled
    under TensorFlow: a graph per input shape)."""
    attention = MultiHeadAttention(heads)
    restricted = MultiHeadAttention(heads)
    lstm = keras.layers.LSTM(d, return_sequences=True)
    convolution = keras.layers.Conv1D(d, kernel_size, padding="same")

    def restricted_call(x):
        n = x.shape[1]
        return restricted(x, x, attention_mask=masks.neighbourhood_mask(n, radius)[None])

    layers = {
        "self-attention": lambda x: attention(x, x),
        "recurrent (LSTM)": lstm,
        "convolution": convolution,
        "restricted self-attention": restricted_call,
    }
    if keras.backend.backend() != "tensorflow":
        return layers
    import tensorflow as tf

    return {name: tf.function(layer) for name, layer in layers.items()}


def measure(
    lengths: Sequence[int] = (16, 32, 64, 128, 256, 512, 1024),
    d_model: int = 128,
    heads: int = 4,
    kernel_size: int = 3,
    radius: int = 8,
    repeats: int = 5,
) -> list[dict]:
    """Times each layer's forward pass (the best of `repeats`, after a warm-up call) on a
    `(1, n, d_model)` input for each `n`; returns a row per layer and length."""
    layers = _layers(d_model, heads, kernel_size, radius)
    rows = []
    for n in lengths:
        x = keras.ops.convert_to_tensor(
            np.random.default_rng(n).normal(size=(1, n, d_model)).astype("float32")
        )
        for name, layer in layers.items():
            keras.ops.convert_to_numpy(layer(x))  # builds and warms up
            seconds = []
            for _ in range(repeats):
                start = time.perf_counter()
                keras.ops.convert_to_numpy(layer(x))
                seconds.append(time.perf_counter() - start)
            complexity, sequential, path = TABLE_1[name]
            rows.append({
                "layer": name, "n": n, "d": d_model, "milliseconds": 1000 * min(seconds),
                "flops": flops(name, n, d_model, kernel_size, radius),
                "complexity": complexity, "sequential_operations": sequential,
                "maximum_path_length": path,
            })  # fmt: skip
    return rows


def plot(rows: Sequence[dict], path: Path) -> None:
    """Time and FLOPs against `n`, log-log, a line per layer, `n = d` marked."""
    import matplotlib.figure

    figure = matplotlib.figure.Figure(figsize=(10, 4))
    time_axes, flops_axes = figure.subplots(1, 2)
    for name in TABLE_1:
        mine = [row for row in rows if row["layer"] == name]
        lengths = [row["n"] for row in mine]
        time_axes.loglog(lengths, [row["milliseconds"] for row in mine], marker="o", label=name)
        flops_axes.loglog(lengths, [row["flops"] for row in mine], marker="o", label=name)
    d = rows[0]["d"]
    for axes, label in ((time_axes, "forward time (ms)"), (flops_axes, "FLOPs")):
        axes.axvline(d, color="gray", linestyle="--", linewidth=0.8)
        axes.set_xlabel(f"sequence length n (d = {d}: dashed)")
        axes.set_ylabel(label)
    time_axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def format_markdown(rows: Sequence[dict]) -> str:
    """A table: a row per length, the milliseconds and FLOPs of each layer."""
    names = list(TABLE_1)
    header = "| n | " + " | ".join(f"{name} ms (GFLOP)" for name in names) + " |"
    lines = [header, "|---" * (len(names) + 1) + "|"]
    for n in sorted({row["n"] for row in rows}):
        cells = []
        for name in names:
            row = next(r for r in rows if r["n"] == n and r["layer"] == name)
            cells.append(f"{row['milliseconds']:.2f} ({row['flops'] / 1e9:.3f})")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", "| layer | complexity per layer | sequential operations | maximum path length |",
              "|---|---|---|---|"]  # fmt: skip
    lines += [f"| {name} | {c} | {s} | {p} |" for name, (c, s, p) in TABLE_1.items()]
    return "\n".join(lines) + "\n"


def write_costs(rows: Sequence[dict], output_dir: str | os.PathLike) -> None:
    """Writes `layer_costs.md`, `layer_costs.json` and `layer_costs.png` into `output_dir`."""
    texts = {"layer_costs.md": format_markdown(rows),
             "layer_costs.json": json.dumps(list(rows), indent=2) + "\n"}  # fmt: skip
    write_outputs(output_dir, texts, ("layer_costs.png", lambda path: plot(rows, path)))
