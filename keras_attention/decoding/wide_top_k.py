"""The `k` largest entries of wide rows (a beam's `beams * vocabulary` candidates), exactly.

`keras.ops.top_k` over a row of 16,000 candidates for 8 of them looks at every entry with a
heap: on TensorFlow's CPU kernel it was the most expensive op of a beam-search step (about
10 ms of 60 for 64 sentences, beam 4, vocabulary 4,000). `wide_top_k` cuts each row into
blocks, takes every block's maximum (one vectorised pass), keeps the `k` blocks with the
largest maxima, and ranks only their entries: the `k` largest entries of a row lie in at most
`k` blocks, and those blocks' maxima are among the `k` largest maxima, so the result is the
same, values and indices, ties included (the kept blocks are taken in the row's order, so that
among equal values the lowest index comes first, as TensorFlow's and JAX's `top_k` order
them; PyTorch's orders ties arbitrarily, and so then does this).
"""

from keras import ops

from keras_attention.decoding.grouped_take import take_along_rows

# Entries per block: about the square root of a beam's candidates (4 x 4,000 to 4 x 32,000),
# so that neither the block maxima nor the kept blocks are many.
DEFAULT_BLOCK = 128


def wide_top_k(x, k: int, block: int = DEFAULT_BLOCK):
    """`keras.ops.top_k(x, k)` of a 2-D `x`, by block maxima when its rows are wide.

    Args:
        x: float `(rows, width)`.
        k: how many entries per row, at most `width`.
        block: entries per block; rows narrower than `4 * k * block` go to `top_k` directly.

    Returns:
        `(values, indices)`: `(rows, k)` each, largest first, as `keras.ops.top_k` returns
        them (indices int32).
    """
    width = x.shape[-1]
    if width is None or width < 4 * k * block:
        values, indices = ops.top_k(x, k)
        return values, ops.cast(indices, "int32")
    blocks = -(-width // block)
    padded = ops.pad(x, [[0, 0], [0, blocks * block - width]], constant_values=float("-inf"))
    rows = ops.shape(x)[0]
    grid = ops.reshape(padded, (rows, blocks, block))
    _, kept = ops.top_k(ops.max(grid, axis=-1), k)  # (rows, k) blocks
    kept = ops.sort(ops.cast(kept, "int32"), axis=-1)  # in the row's order, for ties
    candidates = take_along_rows(grid, kept)  # (rows, k, block), no transpose of `grid`
    values, where = ops.top_k(ops.reshape(candidates, (rows, k * block)), k)
    where = ops.cast(where, "int32")
    chosen_block = take_along_rows(kept, where // block)
    return values, chosen_block * block + where % block
