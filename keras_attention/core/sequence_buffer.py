"""Writing a few positions into a fixed-size sequence buffer (key/value caches, token buffers)."""

from keras import ops


def write_positions(buffer, start, update, axis: int = 1):
    """`buffer` with `update` written at positions `start .. start + T - 1` of `axis`.

    Equivalent to `keras.ops.slice_update(buffer, [0, start, 0, ...], update)`, but built
    from `take` and `where`: on TensorFlow, `slice_update` lowers to `XlaDynamicUpdateSlice`,
    an op that runs only under XLA, which TensorFlow Serving does not run by default.

    Args:
        buffer: `(batch, S, ...)` (or with the sequence axis at `axis`).
        start: int or scalar int tensor, the first position written.
        update: `(batch, T, ...)` with `T <= S - start`, the shape of `buffer` but for `axis`.
        axis: the sequence axis (1 or more).

    Returns:
        A new tensor shaped like `buffer`.
    """
    length = ops.shape(buffer)[axis]
    shape = [1] * axis + [length] + [1] * (len(buffer.shape) - axis - 1)
    if update.shape[axis] == 1:  # one position (a decoding step): broadcast, no gather
        at = ops.equal(ops.arange(length, dtype="int32"), ops.cast(start, "int32"))
        return ops.where(ops.reshape(at, shape), ops.cast(update, buffer.dtype), buffer)
    count = ops.shape(update)[axis]
    offsets = ops.arange(length, dtype="int32") - ops.cast(start, "int32")  # (S,)
    inside = ops.logical_and(offsets >= 0, offsets < count)
    gathered = ops.take(update, ops.clip(offsets, 0, count - 1), axis=axis)  # like buffer
    return ops.where(ops.reshape(inside, shape), ops.cast(gathered, buffer.dtype), buffer)
