"""Writing a few positions into a fixed-size sequence buffer (key/value caches, token buffers)."""

from keras import ops


def write_positions(buffer, start, update):
    """`buffer` with `update` written at positions `start .. start + T - 1` of axis 1.

    Equivalent to `keras.ops.slice_update(buffer, [0, start, 0, ...], update)`, but built
    from `take` and `where`: on TensorFlow, `slice_update` lowers to `XlaDynamicUpdateSlice`,
    an op that runs only under XLA, which TensorFlow Serving does not run by default.

    Args:
        buffer: `(batch, S, ...)`.
        start: int or scalar int tensor, the first position written.
        update: `(batch, T, ...)` with `T <= S - start`, same trailing shape as `buffer`.

    Returns:
        A new tensor shaped like `buffer`.
    """
    length = ops.shape(buffer)[1]
    shape = [1, length] + [1] * (len(buffer.shape) - 2)
    if update.shape[1] == 1:  # one position (a decoding step): broadcast, no gather
        at = ops.equal(ops.arange(length, dtype="int32"), ops.cast(start, "int32"))
        return ops.where(ops.reshape(at, shape), ops.cast(update, buffer.dtype), buffer)
    count = ops.shape(update)[1]
    offsets = ops.arange(length, dtype="int32") - ops.cast(start, "int32")  # (S,)
    inside = ops.logical_and(offsets >= 0, offsets < count)
    gathered = ops.take(update, ops.clip(offsets, 0, count - 1), axis=1)  # (B, S, ...)
    return ops.where(ops.reshape(inside, shape), ops.cast(gathered, buffer.dtype), buffer)
