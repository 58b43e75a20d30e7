"""Pure mask helpers (Section 3.2.3 of the paper).

Every mask in `keras_attention` is boolean with `True` meaning "may attend".
Explicit attention masks have shape `(batch, query_len, key_len)`; padding masks
have shape `(batch, seq_len)` and mark real (non-padding) tokens.
"""

from keras import ops


def keras_mask(x):
    """Returns the Keras mask attached to `x` (set by `mask_zero=True`), or `None`."""
    return getattr(x, "_keras_mask", None)


def padding_mask(token_ids, pad_id: int = 0):
    """Marks the real tokens of a batch of token ids.

    Args:
        token_ids: integer tensor of shape `(batch, seq_len)`.
        pad_id: the id used for padding.

    Returns:
        A boolean tensor of shape `(batch, seq_len)`, `True` where the token is not padding.

    Example:

    >>> keras.ops.convert_to_numpy(padding_mask(np.array([[5, 6, 0]])))
    array([[ True,  True, False]])
    """
    return ops.not_equal(token_ids, pad_id)


def causal_mask(query_length, key_length=None, offset=0):
    """Lower-triangular mask so that a position attends only to itself and earlier positions.

    Args:
        query_length: number of query positions (int or scalar tensor).
        key_length: number of key positions; defaults to `query_length`.
        offset: absolute position of the first query (for incremental decoding, the
            index in the key/value cache where the queries are written).

    Returns:
        A boolean tensor of shape `(query_length, key_length)`, `True` where
        `key_position <= offset + query_position`.

    Example:

    >>> keras.ops.convert_to_numpy(causal_mask(3))
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    >>> keras.ops.convert_to_numpy(causal_mask(1, key_length=3, offset=1))  # decoding step 2
    array([[ True,  True, False]])
    """
    key_length = query_length if key_length is None else key_length
    query_positions = ops.arange(query_length, dtype="int32") + ops.cast(offset, "int32")
    key_positions = ops.arange(key_length, dtype="int32")
    return ops.greater_equal(query_positions[:, None], key_positions[None, :])


def neighbourhood_mask(length, radius: int):
    """Restricted self-attention's mask: each position attends to the `radius` positions on
    either side of it and to itself (the paper's Table 1, "self-attention (restricted)", with
    a neighbourhood of size `r = 2 * radius + 1`).

    Pass it to `MultiHeadAttention` as `attention_mask` (broadcast over the batch). The path
    between two positions then grows as `length / radius`, and a fused kernel still computes
    every score; the saving in the paper's `O(r n d)` needs a banded kernel.

    Args:
        length: number of positions (int or scalar tensor).
        radius: how many positions on each side a position sees.

    Returns:
        A boolean tensor `(length, length)`, `True` where `|query - key| <= radius`.

    Example:

    >>> keras.ops.convert_to_numpy(neighbourhood_mask(4, radius=1))
    array([[ True,  True, False, False],
           [ True,  True,  True, False],
           [False,  True,  True,  True],
           [False, False,  True,  True]])
    """
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 0:
        raise ValueError(f"radius must be an int >= 0; got radius={radius!r}")
    positions = ops.arange(length, dtype="int32")
    distance = ops.abs(positions[:, None] - positions[None, :])
    return ops.less_equal(distance, radius)


def merge_masks(*masks):
    """Logical AND of broadcastable boolean masks, skipping `None`.

    Returns:
        The combined boolean mask, or `None` when every mask is `None`.
    """
    result = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        result = mask if result is None else ops.logical_and(result, mask)
    return result


def attention_mask_from_padding(query_padding_mask=None, key_padding_mask=None):
    """Builds a `(batch, query_len, key_len)`-broadcastable mask from padding masks.

    Args:
        query_padding_mask: optional `(batch, query_len)` boolean mask of real queries.
        key_padding_mask: optional `(batch, key_len)` boolean mask of real keys.

    Returns:
        A boolean tensor broadcastable to `(batch, query_len, key_len)`, or `None`.
    """
    query_part = None if query_padding_mask is None else ops.expand_dims(query_padding_mask, -1)
    key_part = None if key_padding_mask is None else ops.expand_dims(key_padding_mask, -2)
    return merge_masks(query_part, key_part)


def check_mask_shape(name: str, mask, expected: tuple) -> None:
    """Raises a `ValueError` naming `name` when `mask`'s static shape does not fit `expected`.

    `expected` holds ints, or `None` for dimensions that are not checked; a mask
    dimension of 1 broadcasts and is accepted.
    """
    if mask is None:
        return
    shape = tuple(mask.shape)
    if len(shape) != len(expected) or any(
        want is not None and have is not None and have not in (want, 1)
        for have, want in zip(shape, expected, strict=False)
    ):
        readable = tuple("?" if d is None else d for d in expected)
        raise ValueError(
            f"{name} must have shape {readable} (batch, query_len, key_len as it applies); "
            f"got {name}.shape={shape}"
        )
