"""Writing a few positions into a fixed-size sequence buffer (key/value caches, token buffers)."""

from keras import ops


def write_positions(buffer, start, update, axis: int = 1):
    """`buffer` with `update` written at positions `start .. start + T - 1` of `axis`.

    Equivalent to `keras.ops.slice_update(buffer, [0, start, 0, ...], update)`, which on
    TensorFlow lowers to `XlaDynamicUpdateSlice`, an op that runs only under XLA (TensorFlow
    Serving does not run XLA by default). One position (a decoding step) is a scatter
    (`TensorScatterUpdate` on TensorFlow: a copy of the buffer, then the update; 2.6x faster
    than a `where` over the whole buffer, measured on 256 x 2 x 40 x 8 x 32 caches); several
    positions are a `take` and a `where`.

    Args:
        buffer: `(batch, S, ...)` (or with the sequence axis at `axis`).
        start: int or scalar int tensor, the first position written.
        update: `(batch, T, ...)` with `T <= S - start`, the shape of `buffer` but for `axis`.
        axis: the sequence axis (1 or more).

    Returns:
        A new tensor shaped like `buffer`.
    """
    if update.shape[axis] == 1:  # one position (a decoding step)
        return _write_one_position(buffer, start, update, axis)
    length = ops.shape(buffer)[axis]
    shape = [1] * axis + [length] + [1] * (len(buffer.shape) - axis - 1)
    count = ops.shape(update)[axis]
    offsets = ops.arange(length, dtype="int32") - ops.cast(start, "int32")  # (S,)
    inside = ops.logical_and(offsets >= 0, offsets < count)
    gathered = ops.take(update, ops.clip(offsets, 0, count - 1), axis=axis)  # like buffer
    return ops.where(ops.reshape(inside, shape), ops.cast(gathered, buffer.dtype), buffer)


def _write_one_position(buffer, start, update, axis: int):
    """`write_positions` of one position: a scatter of every row of the leading axes."""
    leading = [ops.arange(ops.shape(buffer)[i], dtype="int32") for i in range(axis)]
    rows = [ops.reshape(grid, (-1,)) for grid in ops.meshgrid(*leading, indexing="ij")]
    position = ops.zeros_like(rows[0]) + ops.cast(start, "int32")
    indices = ops.stack([*rows, position], axis=1)  # (rows, axis + 1)
    trailing = tuple(buffer.shape[axis + 1 :])
    updates = ops.reshape(ops.cast(update, buffer.dtype), (-1, *trailing))
    return ops.scatter_update(buffer, indices, updates)
