"""Taking rows within groups of rows: a beam's hypotheses, a row's blocks of candidates.

`keras.ops.take_along_axis(x, indices, axis=1)` on TensorFlow broadcasts the indices to the
shape of the result, then moves `axis` of both `x` and the indices to the end (two transposes
of the whole input) before one gather: on a beam search's `(batch, blocks, block)` candidates
that transpose was 3.5% of a whole search (op statistics of a trained `tiny` model, beam 4).
Taking rows by their flat index is one gather of only the rows that are kept.
"""

from keras import ops


def take_in_groups(tensor, indices, group_size: int, axis: int = 0):
    """The rows `indices` of each group of `group_size` consecutive rows of `tensor`.

    Along `axis`, `tensor` has `B * group_size` rows: group `b` is rows
    `b * group_size ... (b + 1) * group_size - 1`. Row `k` of group `b` in the result is
    `tensor`'s row `b * group_size + indices[b, k]`. The same as
    `take_along_axis(reshape(tensor, (B, group_size, ...)), indices[:, :, None, ...], axis=1)`
    flattened back, for `axis` 0.

    Args:
        tensor: `(..., B * group_size, ...)`, the groups along `axis`.
        indices: int `(B, K)`, in `[0, group_size)`.
        group_size: rows per group.
        axis: the axis of the rows.

    Returns:
        `tensor` with `B * K` rows along `axis`, group by group.

    Example:

    >>> rows = take_in_groups(ops.arange(6), ops.array([[1, 1], [0, 2]]), 3)
    >>> ops.convert_to_numpy(rows)  # rows 1, 1 of group [0 1 2]; rows 0, 2 of group [3 4 5]
    array([1, 1, 3, 5], dtype=int32)
    """
    return ops.take(tensor, flat_rows(indices, group_size), axis=axis)


def flat_rows(indices, group_size: int):
    """The flat row numbers `(B * K,)` of the rows `indices` `(B, K)` of each group of
    `group_size` consecutive rows: `b * group_size + indices[b, k]`.

    Example:

    >>> ops.convert_to_numpy(flat_rows(ops.array([[1, 1], [0, 2]]), 3))
    array([1, 1, 3, 5], dtype=int32)
    """
    groups = ops.shape(indices)[0]
    offsets = ops.arange(groups, dtype="int32")[:, None] * group_size  # (B, 1)
    return ops.reshape(ops.cast(indices, "int32") + offsets, (-1,))  # (B * K,)


def take_along_rows(tensor, indices):
    """`take_along_axis(tensor, indices[..., None], axis=1)` for `tensor` `(B, M, ...)` and
    `indices` `(B, K)`: the rows `indices[b]` of each `tensor[b]`, `(B, K, ...)`."""
    shape = ops.shape(tensor)
    flat = ops.reshape(tensor, (-1, *shape[2:]))  # (B * M, ...)
    picked = take_in_groups(flat, indices, shape[1])  # (B * K, ...)
    return ops.reshape(picked, (shape[0], ops.shape(indices)[1], *shape[2:]))
