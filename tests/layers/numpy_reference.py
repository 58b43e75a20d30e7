"""Float64 NumPy reference of the Transformer blocks and stacks (Sections 3.1 to 3.3).

Every function reads the weights from the Keras layers and recomputes the layer in float64,
so that the tests compare the library against an independent implementation of the paper:

- `layer_norm`: `gamma * (x - mean) / sqrt(var + epsilon) + beta`.
- `multi_head_attention`: `Concat(head_1, ..., head_h) W^O`, masked keys get weight 0 and a
  query with no allowed key gets all-zero weights.
- `feed_forward`: `max(0, x W_1 + b_1) W_2 + b_2`.
- `encoder_block` / `decoder_block`: each sub-layer wrapped as `LayerNorm(x + Sublayer(x))`
  (post-LN) or `x + Sublayer(LayerNorm(x))` (pre-LN, `norm_first=True`).
- `encoder_stack` / `decoder_stack`: the blocks in turn, then pre-LN's final layer norm.

Masks are boolean `(batch, query_len, key_len)` arrays, `True` = may attend, or `None`.
"""

from collections.abc import Callable

import keras
import numpy as np

from keras_attention.layers import PositionalEmbedding
from keras_attention.masks import keras_mask
from tests.tolerances import assert_close


def as_float64(value: object) -> np.ndarray:
    """A tensor, variable or array as a float64 NumPy array."""
    if isinstance(value, keras.Variable):
        value = value.numpy()
    return np.asarray(keras.ops.convert_to_numpy(value), dtype=np.float64)


def randomize_weights(layer: keras.layers.Layer, seed: int = 0, scale: float = 0.3) -> None:
    """Gives every weight of `layer` random values (gammas around 1, the rest around 0),
    so that a reference that ignores biases, betas or gammas does not match."""
    rng = np.random.default_rng(seed)
    values = []
    for weight in layer.weights:
        noise = rng.normal(0.0, scale, tuple(weight.shape))
        values.append(1.0 + noise if weight.path.endswith("gamma") else noise)
    layer.set_weights([value.astype(np.float32) for value in values])


def attention_mask(
    batch: int,
    query_len: int,
    key_len: int,
    query_padding: np.ndarray | None = None,
    key_padding: np.ndarray | None = None,
    causal: bool = False,
    explicit: np.ndarray | None = None,
) -> np.ndarray:
    """The `(batch, query_len, key_len)` boolean mask that the padding masks, a causal mask
    and an explicit mask allow together."""
    mask = np.ones((batch, query_len, key_len), dtype=bool)
    if query_padding is not None:
        mask &= np.asarray(query_padding, dtype=bool)[:, :, None]
    if key_padding is not None:
        mask &= np.asarray(key_padding, dtype=bool)[:, None, :]
    if causal:
        mask &= np.tril(np.ones((query_len, key_len), dtype=bool))[None]
    if explicit is not None:
        mask &= np.asarray(explicit, dtype=bool)
    return mask


def layer_norm(x: np.ndarray, norm: keras.layers.LayerNormalization) -> np.ndarray:
    """Layer normalisation over the last axis with `norm`'s gamma, beta and epsilon."""
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normalized = (x - mean) / np.sqrt(variance + norm.epsilon)
    return normalized * as_float64(norm.gamma) + as_float64(norm.beta)


def _project(x: np.ndarray, dense: keras.layers.Dense, heads: int) -> np.ndarray:
    """`x (B, T, D)` through a `(D, heads * head_dim)` kernel: `(B, T, heads, head_dim)`."""
    out = x @ as_float64(dense.kernel) + as_float64(dense.bias)
    return out.reshape(*out.shape[:-1], heads, out.shape[-1] // heads)


def masked_softmax(logits: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Softmax over the last axis; masked keys get 0 and fully masked rows are all 0."""
    if mask is None:
        mask = np.ones(logits.shape, dtype=bool)
    mask = np.broadcast_to(mask, logits.shape)
    shifted = np.where(mask, logits, -np.inf)
    row_max = shifted.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exponentials = np.where(mask, np.exp(shifted - row_max), 0.0)
    totals = exponentials.sum(axis=-1, keepdims=True)
    return np.divide(exponentials, totals, out=np.zeros_like(exponentials), where=totals > 0)


def multi_head_attention(
    query: np.ndarray, value: np.ndarray, mha: keras.layers.Layer, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head attention with `mha`'s weights; returns the output `(B, Tq, D)` and the
    per-head weights `(B, heads, Tq, Tk)`."""
    heads = mha.num_heads
    queries = _project(query, mha.query_dense, heads)  # (B, Tq, N, H)
    keys = _project(value, mha.key_dense, heads)  # (B, Tk, N, H)
    values = _project(value, mha.value_dense, heads)  # (B, Tk, N, H)
    # The paper's 1 / sqrt(d_k) unless the layer has its own multiplier (`scale`).
    scale = 1.0 / np.sqrt(queries.shape[-1]) if mha.scale is None else mha.scale
    logits = np.einsum("bqnh,bknh->bnqk", queries, keys) * scale
    weights = masked_softmax(logits, None if mask is None else mask[:, None])
    attended = np.einsum("bnqk,bknh->bqnh", weights, values)
    flat = attended.reshape(*attended.shape[:2], -1)  # (B, Tq, N * H)
    output = flat @ as_float64(mha.output_dense.kernel) + as_float64(mha.output_dense.bias)
    return output, weights


def feed_forward(x: np.ndarray, ffn: keras.layers.Layer) -> np.ndarray:
    """The position-wise feed-forward network `max(0, x W_1 + b_1) W_2 + b_2`."""
    assert keras.activations.serialize(ffn.activation) == "relu"
    inner = x @ as_float64(ffn.inner_dense.kernel) + as_float64(ffn.inner_dense.bias)
    inner = np.maximum(inner, 0.0)
    return inner @ as_float64(ffn.output_dense.kernel) + as_float64(ffn.output_dense.bias)


def _sublayer(x: np.ndarray, block: keras.layers.Layer, name: str, function: Callable):
    """Applies the sub-layer `function` with the residual rule and `block`'s `{name}_norm`;
    returns the new `x` and what `function` returns besides its output."""
    norm = getattr(block, f"{name}_norm")
    output, extra = function(layer_norm(x, norm) if block.norm_first else x)
    return (x + output if block.norm_first else layer_norm(x + output, norm)), extra


def decoder_block(
    x: np.ndarray,
    block: keras.layers.Layer,
    self_mask: np.ndarray | None,
    encoder_output: np.ndarray | None = None,
    cross_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, dict]:
    """One decoder block (decoder-only when `encoder_output` is None); returns the output
    and a dict of the self- (and cross-) attention weights. The causal mask is part of
    `self_mask`."""
    scores = {}
    x, scores["self_attention"] = _sublayer(
        x,
        block,
        "self_attention",
        lambda h: multi_head_attention(h, h, block.self_attention, self_mask),
    )
    if encoder_output is not None:
        x, scores["cross_attention"] = _sublayer(
            x,
            block,
            "cross_attention",
            lambda h: multi_head_attention(h, encoder_output, block.cross_attention, cross_mask),
        )
    x, _ = _sublayer(
        x, block, "feed_forward", lambda h: (feed_forward(h, block.feed_forward), None)
    )
    return x, scores


def encoder_block(
    x: np.ndarray, block: keras.layers.Layer, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One encoder block (self-attention with `mask`, then the feed-forward network, as a
    decoder block without cross-attention); returns the output and the attention weights."""
    x, scores = decoder_block(x, block, mask)
    return x, scores["self_attention"]


def _stack(
    x: np.ndarray, stack: keras.layers.Layer, block_function: Callable
) -> tuple[np.ndarray, list]:
    """`stack`'s blocks in turn, then pre-LN's final layer norm (post-LN stacks have none);
    returns the output and the list of each block's weights."""
    all_weights = []
    for block in stack.blocks:
        x, weights = block_function(x, block)
        all_weights.append(weights)
    return (layer_norm(x, stack.final_norm) if stack.norm_first else x), all_weights


def encoder_stack(
    x: np.ndarray, stack: keras.layers.Layer, mask: np.ndarray | None = None
) -> tuple[np.ndarray, list]:
    """The encoder stack; returns the output and each block's self-attention weights."""
    return _stack(x, stack, lambda h, block: encoder_block(h, block, mask))


def decoder_stack(
    x: np.ndarray,
    stack: keras.layers.Layer,
    self_mask: np.ndarray | None,
    encoder_output: np.ndarray | None = None,
    cross_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, list]:
    """The decoder stack; returns the output and each block's attention-weights dict."""
    return _stack(
        x, stack, lambda h, block: decoder_block(h, block, self_mask, encoder_output, cross_mask)
    )


# ---------------------------------------------------------------------------------------------
# Helpers shared by the block and stack tests (tiny sizes: 2 CPU cores run the whole suite).
# ---------------------------------------------------------------------------------------------

BATCH, TARGET_LEN, SOURCE_LEN, D_MODEL, NUM_HEADS, D_FF = 2, 5, 6, 8, 2, 16
LAYER_SIZE = {"num_heads": NUM_HEADS, "intermediate_dim": D_FF}


# Constructor arguments every block and stack rejects, with the words the error must contain.
INVALID_ARGUMENTS = [
    ({"num_heads": 3}, "num_heads=3, d_model=8"),
    ({"dropout": -0.1}, "dropout=-0.1"),
    ({"attention_dropout": 1.0}, "attention_dropout=1.0"),
    ({"activation_dropout": 1.5}, "activation_dropout=1.5"),
    ({"intermediate_dim": 0}, "intermediate_dim=0"),
    ({"layer_norm_epsilon": 0.0}, "layer_norm_epsilon=0.0"),
]


def padding(lengths: list[int], max_len: int) -> np.ndarray:
    """A `(len(lengths), max_len)` padding mask, `True` for the first `length` positions."""
    return np.arange(max_len)[None, :] < np.asarray(lengths)[:, None]


# The second sequence of each batch is padded (target: 2 pads, source: 2 pads).
TARGET_PADDING = padding([TARGET_LEN, TARGET_LEN - 2], TARGET_LEN)
SOURCE_PADDING = padding([SOURCE_LEN, SOURCE_LEN - 2], SOURCE_LEN)


def random_sequence(length: int, seed: int) -> np.ndarray:
    """A random float32 `(BATCH, length, D_MODEL)` input."""
    return np.random.default_rng(seed).normal(size=(BATCH, length, D_MODEL)).astype("float32")


def random_attention_mask(query_len: int, key_len: int, seed: int) -> np.ndarray:
    """A random boolean `(BATCH, query_len, key_len)` mask that allows about half the keys."""
    return np.random.default_rng(seed).random((BATCH, query_len, key_len)) < 0.5


def built_layer(layer: keras.layers.Layer, *inputs: np.ndarray, seed: int = 7):
    """Builds `layer` by calling it once on `inputs`, then randomises all its weights."""
    layer(*inputs)
    randomize_weights(layer, seed)
    return layer


def to_float64(value: object) -> np.ndarray:
    """A float32 input, as the float64 array the reference computes with."""
    return np.asarray(value, dtype=np.float64)


def assert_differ(first: object, second: object) -> None:
    """The two outputs are not equal (a perturbation reached them)."""
    first, second = (np.asarray(keras.ops.convert_to_numpy(t)) for t in (first, second))
    assert not np.allclose(first, second, atol=1e-4), "expected the outputs to differ"


def replace_positions(x: np.ndarray, where: np.ndarray, seed: int) -> np.ndarray:
    """`x` with new random content at the `(batch, length)` positions marked by `where`."""
    noise = np.random.default_rng(seed).normal(size=x.shape).astype(x.dtype) * 3.0
    return np.where(np.asarray(where)[:, :, None], noise, x)


def assert_ignores_positions(
    call: Callable, x: np.ndarray, ignored: np.ndarray, kept: np.ndarray
) -> None:
    """Changing `x` at the `ignored` positions leaves `call(x)` unchanged at the `kept`
    positions (both `(batch, length)` boolean arrays; `kept` indexes `call`'s output)."""
    original = keras.ops.convert_to_numpy(call(x))
    changed = keras.ops.convert_to_numpy(call(replace_positions(x, ignored, seed=99)))
    assert_close(changed[kept], original[kept])


def assert_causal(call: Callable, target: np.ndarray) -> None:
    """Changing target position `t` never changes outputs before `t`, and does change `t`."""
    original = keras.ops.convert_to_numpy(call(target))
    for position in range(1, target.shape[1]):
        where = np.zeros(target.shape[:2], dtype=bool)
        where[:, position] = True
        changed = keras.ops.convert_to_numpy(call(replace_positions(target, where, position)))
        assert_close(changed[:, :position], original[:, :position])
        assert_differ(changed[:, position], original[:, position])


def assert_attention_weights(weights: object, allowed: np.ndarray, expected: np.ndarray) -> None:
    """Per-head weights `(batch, heads, query_len, key_len)`: they equal the reference, sum
    to 1 over the allowed keys of each query that has one, and are 0 on masked keys."""
    weights = np.asarray(keras.ops.convert_to_numpy(weights))
    assert weights.shape == (allowed.shape[0], NUM_HEADS, *allowed.shape[1:])
    allowed = np.broadcast_to(allowed[:, None], weights.shape)
    np.testing.assert_array_equal(weights[~allowed], 0.0)
    has_key = allowed.any(axis=-1)
    assert_close(weights.sum(axis=-1)[has_key], 1.0)
    assert_close(weights, expected)


def keras_masked_embedding(kind: str, ids: np.ndarray, seed: int):
    """Embeds `ids` (0 = padding) with a layer whose output carries a Keras mask:
    `keras.layers.Embedding(mask_zero=True)` or the library's `PositionalEmbedding`.
    Returns the embedded tensor (with its Keras mask) and its values as a plain array."""
    keras.utils.set_random_seed(seed)
    if kind == "embedding":
        embedding = keras.layers.Embedding(16, D_MODEL, mask_zero=True)
    else:
        embedding = PositionalEmbedding(16, D_MODEL, mask_zero=True)
    embedded = embedding(ids)
    assert keras_mask(embedded) is not None
    return embedded, np.array(keras.ops.convert_to_numpy(embedded))


def assert_keras_mask_equals_padding_mask(
    layer: keras.layers.Layer, kind: str, padding_mask: np.ndarray
) -> tuple:
    """Calls `layer` on embeddings whose Keras mask marks `padding_mask` (see
    `keras_masked_embedding`) and on the same values with `padding_mask` given explicitly:
    the outputs are equal and the output passes the Keras mask on. Returns the output and
    the embedded values."""
    embedded, values = keras_masked_embedding(kind, token_ids(padding_mask, seed=3), seed=4)
    output = layer(embedded)
    assert_close(output, layer(values, padding_mask=padding_mask))
    output_mask = keras.ops.convert_to_numpy(keras_mask(output))
    np.testing.assert_array_equal(output_mask, padding_mask)
    return output, values


def token_ids(padding_mask: np.ndarray, seed: int) -> np.ndarray:
    """Random ids in [1, 16) at real positions and 0 at padded ones."""
    ids = np.random.default_rng(seed).integers(1, 16, size=padding_mask.shape)
    return np.where(padding_mask, ids, 0).astype("int32")


def assert_dropout_only_in_training(call: Callable, reference: np.ndarray) -> None:
    """`call(training)` differs from the dropout-free reference only when training."""
    assert_close(call(False), reference)
    assert_close(call(False), call(False))
    assert_differ(call(True), reference)


def decode_one_position_at_a_time(
    layer: keras.layers.Layer,
    target: np.ndarray,
    source: np.ndarray | None = None,
    encoder_padding_mask: np.ndarray | None = None,
    append: bool = False,
) -> np.ndarray:
    """Runs a decoder block or stack one target position at a time with a self-attention
    cache and a cross-attention cache; returns the `(batch, target_len, d_model)` outputs.

    The encoder sequence passed to each step is zeros: the cross-attention must use the
    cache computed once from `source`, not project the encoder sequence again. `append`:
    the self-attention cache starts empty and grows (`append_to_cache`)."""
    batch, length = target.shape[:2]
    cache = layer.initial_cache(batch, 0 if append else length)
    cross_cache = None if source is None else layer.compute_cross_attention_cache(source)
    outputs = []
    for index in range(length):
        output, cache = layer(
            target[:, index : index + 1],
            None if source is None else np.zeros_like(source),
            encoder_padding_mask=encoder_padding_mask,
            self_attention_cache=cache,
            self_attention_cache_update_index=index,
            cross_attention_cache=cross_cache,
            append_to_cache=append,
        )
        outputs.append(keras.ops.convert_to_numpy(output))
    return np.concatenate(outputs, axis=1)
