"""Scaled dot-product attention (Section 3.2.1): softmax(Q K^T / sqrt(d_k)) V."""

import math

import keras
from keras import ops

from keras_attention import masks
from keras_attention.core.checks import check_positive_float, check_rate

# Masked logits are replaced (not shifted) by this value, and the softmax is always computed
# in float32 or wider, so it cannot overflow under float16 / bfloat16 policies.
_MASKED_LOGIT = -1e9


def masked_softmax(scores, mask=None):
    """Softmax over the last axis that gives exactly 0 weight to masked keys.

    The softmax runs in float32 (float64 for float64 inputs) and the result is cast back
    to the dtype of `scores`. A row whose keys are all masked gets all-zero weights, not NaN.

    Args:
        scores: attention logits of shape `(..., query_len, key_len)`.
        mask: optional boolean tensor broadcastable to `scores`, `True` = may attend.

    Returns:
        Attention weights with the shape and dtype of `scores`.
    """
    dtype = scores.dtype
    compute_dtype = keras.backend.result_type(dtype, "float32")
    scores = ops.cast(scores, compute_dtype)
    if mask is None:
        return ops.cast(ops.softmax(scores, axis=-1), dtype)
    mask = ops.cast(mask, "bool")
    scores = ops.where(mask, scores, ops.cast(_MASKED_LOGIT, compute_dtype))
    weights = ops.softmax(scores, axis=-1)
    weights = ops.where(mask, weights, ops.zeros_like(weights))
    return ops.cast(weights, dtype)


def _check_inputs(query, key, value, mask) -> None:
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        if len(tensor.shape) < 2:
            raise ValueError(
                f"{name} must have rank >= 2 (..., length, depth); got {name}.shape={tensor.shape}"
            )
    depth_q, depth_k = query.shape[-1], key.shape[-1]
    if depth_q is not None and depth_k is not None and depth_q != depth_k:
        raise ValueError(
            "query and key must have the same depth (last dimension); got "
            f"query.shape={query.shape}, key.shape={key.shape}"
        )
    len_k, len_v = key.shape[-2], value.shape[-2]
    if len_k is not None and len_v is not None and len_k != len_v:
        raise ValueError(
            "key and value must have the same length (second-to-last dimension); got "
            f"key.shape={key.shape}, value.shape={value.shape}"
        )
    if mask is not None:
        mask_shape = tuple(mask.shape)
        wanted = (query.shape[-2], key.shape[-2])
        if len(mask_shape) < 2 or any(
            have is not None and want is not None and have not in (want, 1)
            for have, want in zip(mask_shape[-2:], wanted, strict=False)
        ):
            raise ValueError(
                "mask must be broadcastable to (..., query_len, key_len) = "
                f"(..., {wanted[0]}, {wanted[1]}); got mask.shape={mask_shape}"
            )


def scaled_dot_product_attention(
    query,
    key,
    value,
    mask=None,
    dropout: float = 0.0,
    training: bool = False,
    seed=None,
    scale: float | None = None,
    return_attention_scores: bool = False,
):
    """Scaled dot-product attention, Section 3.2.1 (Equation 1).

    Computes `softmax(Q K^T * scale) V` with `scale = 1 / sqrt(d_k)` by default. Leading
    dimensions are batch-like (for example `(batch, heads)`), so the same function serves
    one head or many.

    Args:
        query: tensor of shape `(..., query_len, d_k)`.
        key: tensor of shape `(..., key_len, d_k)`.
        value: tensor of shape `(..., key_len, d_v)`.
        mask: optional boolean tensor broadcastable to `(..., query_len, key_len)`;
            `True` = may attend. Masked keys get exactly zero weight; a query whose keys
            are all masked gets a zero output (never NaN).
        dropout: dropout rate applied to the attention weights when `training`.
        training: whether dropout is active.
        seed: seed for the dropout (an int or a `keras.random.SeedGenerator`).
        scale: multiplier of the logits; defaults to `1 / sqrt(d_k)`.
        return_attention_scores: if `True`, also return the attention weights
            (after masking, before dropout).

    Returns:
        The attention output of shape `(..., query_len, d_v)`, and the weights of shape
        `(..., query_len, key_len)` when `return_attention_scores=True`.

    Example:

    >>> q = np.random.rand(2, 5, 16).astype("float32")
    >>> keras.ops.shape(scaled_dot_product_attention(q, q, q))
    (2, 5, 16)
    """
    query, key, value = (ops.convert_to_tensor(t) for t in (query, key, value))
    if mask is not None:
        mask = ops.convert_to_tensor(mask)
    _check_inputs(query, key, value, mask)
    check_rate("dropout", dropout)
    if scale is None:
        depth = query.shape[-1] if query.shape[-1] is not None else ops.shape(query)[-1]
        scale = 1.0 / math.sqrt(depth) if isinstance(depth, int) else ops.rsqrt(depth)
    else:
        check_positive_float("scale", scale)
    # The logits and the softmax run in float32 (or wider): under float16 Q K^T overflows.
    logits_dtype = keras.backend.result_type(query.dtype, "float32")
    # An einsum, not a matmul with a transposed key: no copy of the keys (a decoding cache).
    scores = ops.einsum(
        "...qd,...kd->...qk", ops.cast(query, logits_dtype), ops.cast(key, logits_dtype)
    )  # (..., Tq, Tk)
    scores = ops.multiply(scores, ops.cast(scale, logits_dtype))
    weights = ops.cast(masked_softmax(scores, mask), query.dtype)  # (..., Tq, Tk)
    attended = weights
    if training and dropout > 0:
        attended = keras.random.dropout(weights, dropout, seed=seed)
    output = ops.matmul(attended, ops.cast(value, attended.dtype))  # (..., Tq, d_v)
    if return_attention_scores:
        return output, weights
    return output


@keras.saving.register_keras_serializable(package="keras_attention")
class ScaledDotProductAttention(keras.layers.Layer):
    """Scaled dot-product attention as a layer, Section 3.2.1.

    A layer wrapper of `scaled_dot_product_attention` that owns the dropout seed.
    It has no weights. The Keras masks of `query`, `key` and `value` (from
    `mask_zero=True`) are applied as padding masks, as in `MultiHeadAttention`, and the
    Keras mask of `query` is passed on to the output.

    Args:
        dropout: dropout rate on the attention weights, in `[0, 1)`.
        scale: multiplier of the logits; defaults to `1 / sqrt(d_k)`.
        seed: optional int seed for the dropout.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(..., query_len, d_k)`.
        key: `(..., key_len, d_k)`.
        value: `(..., key_len, d_v)`.
        mask: optional boolean mask broadcastable to `(..., query_len, key_len)`.
        training: Python boolean, whether dropout is active.
        return_attention_scores: also return the attention weights.
        query_mask: optional boolean `(batch, query_len)` of real queries; filled from the
            Keras mask of `query`. A padding query attends to nothing (zero output).
        value_mask: optional boolean `(batch, key_len)` of real keys; filled from the
            Keras mask of `value`.
        key_mask: optional boolean `(batch, key_len)`; filled from the Keras mask of `key`.

    Returns:
        `(..., query_len, d_v)`, and the weights `(..., query_len, key_len)` when asked.

    Example:

    >>> layer = ScaledDotProductAttention(dropout=0.1)
    >>> x = np.random.rand(2, 4, 5, 8).astype("float32")  # (batch, heads, len, depth)
    >>> keras.ops.shape(layer(x, x, x))
    (2, 4, 5, 8)
    """

    def __init__(
        self, dropout: float = 0.0, scale: float | None = None, seed: int | None = None, **kwargs
    ):
        super().__init__(**kwargs)
        check_rate("dropout", dropout)
        if scale is not None:
            check_positive_float("scale", scale)
        self.dropout = dropout
        self.scale = scale
        self.seed = seed
        self.supports_masking = True
        self.seed_generator = keras.random.SeedGenerator(seed) if dropout > 0 else None

    def call(
        self,
        query,
        key,
        value,
        mask=None,
        training=None,
        return_attention_scores: bool = False,
        query_mask=None,
        value_mask=None,
        key_mask=None,
    ):
        _check_inputs(query, key, value, mask)
        masks.check_mask_shape("query_mask", query_mask, (query.shape[0], query.shape[-2]))
        for name, padding in (("value_mask", value_mask), ("key_mask", key_mask)):
            masks.check_mask_shape(name, padding, (key.shape[0], key.shape[-2]))
        padding = masks.attention_mask_from_padding(
            query_mask, masks.merge_masks(value_mask, key_mask)
        )  # (B, Tq|1, Tk|1)
        if padding is not None and len(query.shape) > 3:
            heads_axes = tuple(range(1, len(query.shape) - 2))
            padding = ops.expand_dims(padding, heads_axes)  # (B, 1, ..., Tq|1, Tk|1)
        return scaled_dot_product_attention(
            query,
            key,
            value,
            mask=masks.merge_masks(padding, mask),
            dropout=self.dropout,
            training=bool(training),
            seed=self.seed_generator,
            scale=self.scale,
            return_attention_scores=return_attention_scores,
        )

    def compute_mask(self, query, previous_mask=None):
        # `previous_mask` is the explicit attention `mask` when one is given: the output
        # keeps the padding mask of the queries instead.
        return masks.keras_mask(query)

    def compute_output_shape(self, query_shape, key_shape, value_shape):
        return (*tuple(query_shape[:-1]), value_shape[-1])

    def compute_output_spec(self, query, key, value, *args, **kwargs):
        output = keras.KerasTensor(
            self.compute_output_shape(query.shape, key.shape, value.shape), self.compute_dtype
        )
        if kwargs.get("return_attention_scores"):
            scores_shape = (*tuple(query.shape[:-1]), key.shape[-2])
            return output, keras.KerasTensor(scores_shape, self.compute_dtype)
        return output

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "scale": self.scale, "seed": self.seed})
        return config
