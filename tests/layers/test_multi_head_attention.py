"""Multi-head attention (Section 3.2.2) against a float64 NumPy reference built from its weights."""

import re

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from tests.conftest import to_numpy
from tests.layers import numpy_reference as reference
from tests.tolerances import assert_close

BATCH, D_MODEL, HEADS = 2, 16, 4


def _random(shape: tuple, seed: int) -> np.ndarray:
    """Standard-normal float32 values of `shape`."""
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _built_layer(
    query: np.ndarray, value: np.ndarray, key: np.ndarray | None = None, **kwargs
) -> MultiHeadAttention:
    """A `MultiHeadAttention` built on the inputs, with random weights (non-zero biases)."""
    layer = MultiHeadAttention(**{"num_heads": HEADS, **kwargs})
    layer(query, value, key=key)
    reference.randomize_weights(layer, seed=0, scale=0.5)
    return layer


def _dense(layer: keras.layers.Dense, x: np.ndarray, equation: str) -> np.ndarray:
    """A projection recomputed in float64 from the layer's weights, per head: the `Dense`
    kernel `(d, heads * head_dim)` read as `(d, heads, head_dim)` for `btd,dnh->btnh`, and
    `(heads * head_dim, d)` as `(heads, head_dim, d)` for `bqnh,nhd->bqd`."""
    kernel = reference.as_float64(layer.kernel)
    rows, columns = kernel.shape
    splits_input = equation.startswith("btd,")
    if splits_input:
        kernel = kernel.reshape(rows, HEADS, columns // HEADS)
    else:
        kernel = kernel.reshape(HEADS, rows // HEADS, columns)
    out = np.einsum(equation, reference.to_float64(x), kernel)
    if layer.bias is None:
        return out
    return out + reference.as_float64(layer.bias).reshape(out.shape[2:])


def _reference_mask(
    query_length: int,
    key_length: int,
    query_mask: np.ndarray | None = None,
    value_mask: np.ndarray | None = None,
    attention_mask: np.ndarray | None = None,
    use_causal_mask: bool = False,
) -> np.ndarray:
    """Every mask of a call (its keyword arguments) combined into one `(batch, Tq, Tk)`."""
    return reference.attention_mask(
        BATCH,
        query_length,
        key_length,
        query_padding=query_mask,
        key_padding=value_mask,
        causal=use_causal_mask,
        explicit=attention_mask,
    )


def _reference_projections(
    layer: MultiHeadAttention, value: np.ndarray, key: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Projected keys and values `(batch, key_len, heads, head_dim)` in float64."""
    key = value if key is None else key
    return (
        _dense(layer.key_dense, key, "btd,dnh->btnh"),
        _dense(layer.value_dense, value, "btd,dnh->btnh"),
    )


def _reference_mha(
    layer: MultiHeadAttention,
    query: np.ndarray,
    value: np.ndarray,
    key: np.ndarray | None = None,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head attention in float64; returns `(output, weights (batch, heads, Tq, Tk))`."""
    q = _dense(layer.query_dense, query, "btd,dnh->btnh")
    k, v = _reference_projections(layer, value, key)
    # The paper's 1 / sqrt(d_k), unless the layer was given its own multiplier.
    scale = 1.0 / np.sqrt(q.shape[-1]) if layer.scale is None else layer.scale
    logits = np.einsum("bqnh,bknh->bnqk", q, k) * scale
    weights = reference.masked_softmax(logits, None if mask is None else mask[:, None])
    attended = np.einsum("bnqk,bknh->bqnh", weights, v)
    return _dense(layer.output_dense, attended, "bqnh,nhd->bqd"), weights


def _call(layer: MultiHeadAttention, *args, **kwargs) -> tuple[np.ndarray, ...]:
    """Calls the layer; returns every output as NumPy arrays, in order."""
    result = layer(*args, **kwargs)
    return tuple(to_numpy(r) for r in (result if isinstance(result, tuple) else (result,)))


def _decode_in_chunks(
    layer: MultiHeadAttention,
    x: np.ndarray,
    chunk: int,
    tensor_index: bool,
    attention_mask: np.ndarray | None = None,
    append: bool = False,
    **kwargs,
) -> tuple[list, np.ndarray]:
    """Self-attention over `x` a chunk of positions at a time through a cache.

    `attention_mask` `(batch, len, len)` is passed a chunk of query rows at a time, over the
    whole cache (over the positions so far when `append`: the cache then starts empty and
    grows). Returns the per-chunk results (each without the cache) and the final cache.
    """
    cache = layer.initial_cache(BATCH, 0 if append else x.shape[1])
    results = []
    for start in range(0, x.shape[1], chunk):
        index = keras.ops.convert_to_tensor(start) if tensor_index else start
        rows = slice(start, start + chunk)
        if attention_mask is not None:
            keys = slice(0, start + chunk) if append else slice(None)
            kwargs["attention_mask"] = attention_mask[:, rows, keys]
        # The order of every layer of the library: output, cache, then scores.
        output, cache, *scores = layer(
            x[:, rows],
            x[:, rows],
            cache=cache,
            cache_update_index=index,
            use_causal_mask=True,
            append_to_cache=append,
            **kwargs,
        )
        results.append([to_numpy(r) for r in (output, *scores)])
    return results, to_numpy(cache)


# Reference cases: layer arguments, (query_len, query depth), (key_len, value depth, key depth),
# and which masks are passed.
CASES = {
    "self_attention": ({}, (5, D_MODEL), None, ()),
    "cross_attention": ({}, (3, D_MODEL), (6, 12, None), ()),
    "cross_attention_key": ({}, (3, D_MODEL), (6, 12, 10), ()),
    "dim_overrides": (
        {"key_dim": 3, "value_dim": 5, "output_shape": 7},
        (4, D_MODEL),
        (6, 12, None),
        (),
    ),
    "no_bias": ({"use_bias": False}, (5, D_MODEL), None, ()),
    "unscaled": ({"scale": 1.0}, (5, D_MODEL), None, ("use_causal_mask",)),
    "own_scale": ({"scale": 0.7, "key_dim": 3}, (3, D_MODEL), (6, 12, None), ("value_mask",)),
    "value_mask": ({}, (3, D_MODEL), (6, 12, None), ("value_mask",)),
    "query_mask": ({}, (5, D_MODEL), None, ("query_mask",)),
    "attention_mask": ({}, (4, D_MODEL), (6, 12, None), ("attention_mask",)),
    "causal": ({}, (5, D_MODEL), None, ("use_causal_mask",)),
    "causal_cross": ({}, (4, D_MODEL), (6, 12, None), ("use_causal_mask",)),
    "all_masks": (
        {"key_dim": 3, "value_dim": 5},
        (5, D_MODEL),
        None,
        ("value_mask", "query_mask", "attention_mask", "use_causal_mask"),
    ),
}


def _case_inputs(case: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict]:
    """The query, value, key and mask arguments of a reference case."""
    _, (query_length, query_depth), key_value, mask_names = case
    query = _random((BATCH, query_length, query_depth), 1)
    if key_value is None:
        value, key = query, None
    else:
        key_length, value_depth, key_depth = key_value
        value = _random((BATCH, key_length, value_depth), 2)
        key = None if key_depth is None else _random((BATCH, key_length, key_depth), 3)
    key_length = value.shape[1]
    masks = {
        "query_mask": reference.padding([query_length, query_length - 2], query_length),
        "value_mask": reference.padding([key_length - 1, key_length - 3], key_length),
        "attention_mask": np.random.default_rng(4).random((BATCH, query_length, key_length)) < 0.7,
        "use_causal_mask": True,
    }
    return query, value, key, {name: masks[name] for name in mask_names}


@pytest.mark.parametrize("return_scores", [False, True], ids=["fused_path", "scores_path"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_matches_numpy_reference(case: tuple, return_scores: bool):
    query, value, key, mask_arguments = _case_inputs(case)
    layer = _built_layer(query, value, key=key, **case[0])
    result = _call(
        layer, query, value, key=key, return_attention_scores=return_scores, **mask_arguments
    )
    mask = _reference_mask(query.shape[1], value.shape[1], **mask_arguments)
    want_output, want_weights = _reference_mha(layer, query, value, key=key, mask=mask)
    assert result[0].shape == want_output.shape
    assert_close(result[0], want_output)
    if return_scores:
        assert result[1].shape == (BATCH, HEADS, query.shape[1], value.shape[1])
        assert_close(result[1], want_weights)
        np.testing.assert_array_equal(
            result[1][np.broadcast_to(~mask[:, None], result[1].shape)], 0
        )


def test_rows_with_every_key_masked_attend_to_nothing():
    x = _random((BATCH, 4, D_MODEL), 1)
    layer = _built_layer(x, x)
    attention_mask = np.ones((BATCH, 4, 4), bool)
    attention_mask[0, 2] = False
    attention_mask[1, :] = False
    want, _ = _reference_mha(layer, x, x, mask=attention_mask)
    bias = to_numpy(layer.output_dense.bias.value)
    assert_close(want[1], np.broadcast_to(bias, want[1].shape))
    for return_scores in (False, True):
        result = _call(
            layer, x, x, attention_mask=attention_mask, return_attention_scores=return_scores
        )
        assert all(np.all(np.isfinite(r)) for r in result)
        assert_close(result[0], want)


@pytest.mark.parametrize("return_scores", [False, True], ids=["fused_path", "scores_path"])
def test_causal_mask_hides_the_future(return_scores: bool):
    x = _random((BATCH, 6, D_MODEL), 1)
    layer = _built_layer(x, x)
    changed = x.copy()
    changed[:, 3] += 1.0
    before = _call(layer, x, x, use_causal_mask=True, return_attention_scores=return_scores)[0]
    after = _call(
        layer, changed, changed, use_causal_mask=True, return_attention_scores=return_scores
    )[0]
    assert_close(after[:, :3], before[:, :3])
    assert not np.allclose(after[:, 3:], before[:, 3:], atol=1e-3)


@pytest.mark.parametrize("return_scores", [False, True], ids=["fused_path", "scores_path"])
@pytest.mark.parametrize("self_attention", [True, False], ids=["self", "cross"])
def test_padded_keys_are_ignored(self_attention: bool, return_scores: bool):
    value = _random((BATCH, 6, D_MODEL), 1)
    query = value if self_attention else _random((BATCH, 4, D_MODEL), 2)
    value_mask = reference.padding([4, 2], 6)
    layer = _built_layer(query, value)
    changed = np.where(value_mask[:, :, None], value, _random(value.shape, 3))
    changed_query = changed if self_attention else query
    before = _call(
        layer, query, value, value_mask=value_mask, return_attention_scores=return_scores
    )
    after = _call(
        layer, changed_query, changed, value_mask=value_mask, return_attention_scores=return_scores
    )
    unchanged = value_mask if self_attention else np.ones((BATCH, 4), bool)
    assert_close(after[0][unchanged], before[0][unchanged])
    unmasked = _call(layer, query, changed, return_attention_scores=return_scores)[0]
    assert not np.allclose(unmasked[unchanged], before[0][unchanged], atol=1e-3)


def test_keras_masks_are_applied():
    tokens = np.array([[3, 5, 2, 7, 0, 0], [4, 1, 0, 0, 0, 0]])
    embedding = keras.layers.Embedding(10, D_MODEL, mask_zero=True)
    embedded = embedding(tokens)
    plain = to_numpy(embedded)
    query = _random((BATCH, 3, D_MODEL), 1)
    layer = _built_layer(plain, plain)
    real = tokens != 0
    self_result = _call(layer, embedded, embedded)[0]
    want = _call(layer, plain, plain, query_mask=real, value_mask=real)[0]
    assert_close(self_result, want)
    cross_result = _call(layer, query, embedded)[0]
    assert_close(cross_result, _call(layer, query, plain, value_mask=real)[0])
    assert not np.allclose(cross_result, _call(layer, query, plain)[0], atol=1e-3)


def test_keras_masks_are_applied_in_a_functional_model():
    tokens = np.array([[3, 5, 2, 7, 0, 0], [4, 1, 0, 0, 0, 0]])
    inputs = keras.Input((6,), dtype="int32")
    embedding = keras.layers.Embedding(10, D_MODEL, mask_zero=True)
    layer = MultiHeadAttention(num_heads=HEADS)
    embedded = embedding(inputs)
    model = keras.Model(inputs, layer(embedded, embedded))
    plain = to_numpy(embedding(tokens))
    real = tokens != 0
    want = _call(layer, plain, plain, query_mask=real, value_mask=real)[0]
    assert_close(to_numpy(model(tokens)), want)


@pytest.mark.parametrize("append", [False, True], ids=["fixed_cache", "growing_cache"])
@pytest.mark.parametrize("tensor_index", [False, True], ids=["int_index", "tensor_index"])
@pytest.mark.parametrize("chunk", [1, 2])
@pytest.mark.parametrize("return_scores", [False, True], ids=["fused_path", "scores_path"])
def test_cached_decoding_matches_a_full_causal_call(
    chunk: int, tensor_index: bool, return_scores: bool, append: bool
):
    x = _random((BATCH, 6, D_MODEL), 1)
    layer = _built_layer(x, x)
    full = _call(layer, x, x, use_causal_mask=True)[0]
    want_output, want_weights = _reference_mha(
        layer, x, x, mask=_reference_mask(6, 6, use_causal_mask=True)
    )
    assert_close(full, want_output)
    results, cache = _decode_in_chunks(
        layer, x, chunk, tensor_index, return_attention_scores=return_scores, append=append
    )
    assert_close(np.concatenate([r[0] for r in results], axis=1), full)
    if return_scores:
        # Over a growing cache a chunk's scores cover the positions so far: pad to compare.
        padded = [np.pad(r[1], [(0, 0)] * 3 + [(0, 6 - r[1].shape[3])]) for r in results]
        scores = np.concatenate(padded, axis=2)  # (B, N, T, max_len)
        assert_close(scores, want_weights)
    want_keys, want_values = _reference_projections(layer, x)  # (B, T, N, H)
    assert cache.shape == (2, BATCH, HEADS, 6, D_MODEL // HEADS)
    assert_close(cache[0], want_keys.swapaxes(1, 2))
    assert_close(cache[1], want_values.swapaxes(1, 2))


@pytest.mark.parametrize("append", [False, True], ids=["fixed_cache", "growing_cache"])
def test_cached_decoding_uses_the_layers_scale(append: bool):
    x = _random((BATCH, 6, D_MODEL), 1)
    layer = _built_layer(x, x, scale=1.0)
    results, _ = _decode_in_chunks(layer, x, 2, False, append=append)
    want, _ = _reference_mha(layer, x, x, mask=_reference_mask(6, 6, use_causal_mask=True))
    assert_close(np.concatenate([r[0] for r in results], axis=1), want)
    # The paper's scaling gives other outputs: the multiplier is really applied.
    default = _built_layer(x, x)
    assert not np.allclose(_call(default, x, x, use_causal_mask=True)[0], want, atol=1e-3)


@pytest.mark.parametrize("append", [False, True], ids=["fixed_cache", "growing_cache"])
def test_cached_decoding_applies_an_attention_mask_over_the_cache(append: bool):
    x = _random((BATCH, 6, D_MODEL), 1)
    layer = _built_layer(x, x)
    attention_mask = np.random.default_rng(5).random((BATCH, 6, 6)) < 0.6
    attention_mask[:, :, 0] = True
    results, _ = _decode_in_chunks(layer, x, 2, False, attention_mask=attention_mask, append=append)
    mask = _reference_mask(6, 6, attention_mask=attention_mask, use_causal_mask=True)
    want, _ = _reference_mha(layer, x, x, mask=mask)
    assert_close(np.concatenate([r[0] for r in results], axis=1), want)


def test_cache_holds_only_written_positions_and_is_not_modified_in_place():
    x = _random((BATCH, 6, D_MODEL), 1)
    layer = _built_layer(x, x)
    empty = layer.initial_cache(BATCH, 6)
    output, cache = _call(
        layer, x[:, :3], x[:, :3], cache=empty, cache_update_index=0, use_causal_mask=True
    )
    np.testing.assert_array_equal(to_numpy(empty), 0.0)
    want_keys, want_values = _reference_projections(layer, x[:, :3])
    # Keys and values first, heads before positions: (2, batch, heads, max_len, head_dim).
    assert_close(cache[0, :, :, :3], want_keys.swapaxes(1, 2))
    assert_close(cache[1, :, :, :3], want_values.swapaxes(1, 2))
    np.testing.assert_array_equal(cache[:, :, :, 3:], 0.0)
    assert_close(output, _call(layer, x[:, :3], x[:, :3], use_causal_mask=True)[0])


def test_cache_without_causal_mask_hides_unwritten_positions():
    x = _random((BATCH, 6, D_MODEL), 1)
    layer = _built_layer(x, x)
    cache = layer.initial_cache(BATCH, 6)
    _, cache = _call(layer, x[:, :2], x[:, :2], cache=cache, cache_update_index=0)
    output = _call(layer, x[:, 2:4], x[:, 2:4], cache=cache, cache_update_index=2)[0]
    mask = _reference_mask(2, 4)
    want, _ = _reference_mha(layer, x[:, 2:4], x[:, :4], mask=mask)
    assert_close(output, want)


def test_calls_with_a_cache_are_independent():
    x, other = _random((BATCH, 4, D_MODEL), 1), _random((BATCH, 4, D_MODEL), 2)
    layer = _built_layer(x, x)
    first, _ = _decode_in_chunks(layer, x, 1, False)
    _decode_in_chunks(layer, other, 1, False)
    again, _ = _decode_in_chunks(layer, x, 1, False)
    for want, got in zip(first, again, strict=True):
        assert_close(got[0], want[0])
    assert not any(isinstance(v, type(keras.ops.zeros(1))) for v in vars(layer).values())


@pytest.mark.parametrize("return_scores", [False, True], ids=["fused_path", "scores_path"])
def test_cross_attention_cache_equals_the_plain_call(return_scores: bool):
    query, memory = _random((BATCH, 3, D_MODEL), 1), _random((BATCH, 5, 12), 2)
    value_mask = reference.padding([5, 3], 5)
    layer = _built_layer(query, memory)
    cache = layer.compute_key_value_cache(memory)
    want_keys, want_values = _reference_projections(layer, memory)
    assert_close(to_numpy(cache)[0], want_keys.swapaxes(1, 2))
    assert_close(to_numpy(cache)[1], want_values.swapaxes(1, 2))
    plain = _call(
        layer, query, memory, value_mask=value_mask, return_attention_scores=return_scores
    )
    # The cache replaces the keys and values: `value` is not projected again.
    cached = _call(
        layer,
        query,
        np.zeros_like(memory),
        value_mask=value_mask,
        cache=cache,
        return_attention_scores=return_scores,
    )
    assert len(cached) == len(plain)
    for got, want in zip(cached, plain, strict=True):
        assert_close(got, want)


def test_dropout_only_when_training():
    x = _random((BATCH, 5, D_MODEL), 1)
    layer = _built_layer(x, x, dropout=0.5, seed=3)
    want, _ = _reference_mha(layer, x, x)
    assert_close(_call(layer, x, x, training=False)[0], want)
    assert_close(_call(layer, x, x)[0], want)
    trained = _call(layer, x, x, training=True)[0]
    assert np.all(np.isfinite(trained))
    assert not np.allclose(trained, want, atol=1e-3)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"num_heads": 0}, r"num_heads=0"),
        ({"num_heads": -2}, r"num_heads=-2"),
        ({"num_heads": 2, "dropout": -0.1}, r"dropout=-0\.1"),
        ({"num_heads": 2, "dropout": 1.0}, r"dropout=1\.0"),
        ({"num_heads": 2, "key_dim": 0}, r"key_dim=0"),
        ({"num_heads": 2, "scale": 0.0}, r"scale=0\.0"),
        ({"num_heads": 2, "scale": "sqrt"}, r"scale='sqrt'"),
    ],
)
def test_rejects_bad_arguments(arguments: dict, message: str):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**arguments)


def test_num_heads_must_divide_d_model():
    x = _random((BATCH, 4, D_MODEL), 1)
    with pytest.raises(ValueError, match=rf"num_heads.*d_model.*num_heads=3, d_model={D_MODEL}"):
        MultiHeadAttention(num_heads=3)(x, x)
    assert MultiHeadAttention(num_heads=3, key_dim=4)(x, x).shape == x.shape


def _bad_call(layer: MultiHeadAttention, x: np.ndarray, problem: str):
    """Calls `layer` on `x` with one malformed argument named by `problem`."""
    arguments = {
        "query_rank": {"query": x[0]},
        "attention_mask_keys": {"attention_mask": np.ones((BATCH, 4, 3), bool)},
        "attention_mask_rank": {"attention_mask": np.ones((4, 4), bool)},
        "value_mask": {"value_mask": np.ones((BATCH, 3), bool)},
        "query_mask": {"query_mask": np.ones((BATCH, 5), bool)},
        "cache_shape": {
            "cache": np.zeros((BATCH, 2, 6, HEADS, 3), "float32"),
            "cache_update_index": 0,
        },
    }[problem]
    return layer(**{"query": x, "value": x, **arguments})


@pytest.mark.parametrize(
    "problem, message",
    [
        ("query_rank", r"query\.shape=\(4, 16\)"),
        ("attention_mask_keys", r"attention_mask\.shape=\(2, 4, 3\)"),
        ("attention_mask_rank", r"attention_mask\.shape=\(4, 4\)"),
        ("value_mask", r"value_mask\.shape=\(2, 3\)"),
        ("query_mask", r"query_mask\.shape=\(2, 5\)"),
        ("cache_shape", r"cache\.shape=\(2, 2, 6, 4, 3\)"),
    ],
)
@pytest.mark.parametrize("built", [False, True], ids=["fresh", "built"])
def test_rejects_bad_call_arguments(problem: str, message: str, built: bool):
    x = _random((BATCH, 4, D_MODEL), 1)
    layer = MultiHeadAttention(num_heads=HEADS)
    if built:
        layer(x, x)
    with pytest.raises(ValueError, match=message):
        _bad_call(layer, x, problem)


def test_cache_needs_key_dim_equal_to_value_dim():
    x = _random((BATCH, 4, D_MODEL), 1)
    layer = MultiHeadAttention(num_heads=HEADS, key_dim=4, value_dim=6)
    with pytest.raises(ValueError, match="must be built"):
        layer.initial_cache(BATCH, 4)
    layer(x, x)
    message = r"key_dim == value_dim.*key_dim=4, value_dim=6"
    with pytest.raises(ValueError, match=message):
        layer.initial_cache(BATCH, 4)
    with pytest.raises(ValueError, match=message):
        layer.compute_key_value_cache(x)
    with pytest.raises(ValueError, match=message):
        layer(x, x, cache=np.zeros((BATCH, 2, 4, HEADS, 4), "float32"), cache_update_index=0)


def test_append_to_cache_needs_a_cache_update_index():
    x = _random((BATCH, 4, D_MODEL), 1)
    layer = _built_layer(x, x)
    with pytest.raises(ValueError, match=r"append_to_cache needs .*cache_update_index=None"):
        layer(x, x, cache=layer.initial_cache(BATCH, 0), append_to_cache=True)


def test_cache_update_index_needs_a_cache():
    x = _random((BATCH, 4, D_MODEL), 1)
    with pytest.raises(ValueError, match="cache_update_index=1"):
        MultiHeadAttention(num_heads=HEADS)(x, x, cache_update_index=1)


def test_symbolic_outputs():
    query, value = keras.Input((3, D_MODEL)), keras.Input((5, 12))
    layer = MultiHeadAttention(num_heads=HEADS, output_shape=7)
    output, scores = layer(query, value, return_attention_scores=True)
    assert tuple(output.shape) == (None, 3, 7)
    assert tuple(scores.shape) == (None, HEADS, 3, 5)


def test_seeded_initializer_gives_distinct_but_reproducible_projections():
    x = _random((BATCH, 4, D_MODEL), 1)
    kernels = []
    for _ in range(2):
        layer = MultiHeadAttention(
            num_heads=HEADS, kernel_initializer=keras.initializers.GlorotUniform(seed=5)
        )
        layer(x, x)
        kernels.append([to_numpy(d.kernel.value) for d in (layer.query_dense, layer.key_dense)])
    assert not np.allclose(kernels[0][0], kernels[0][1])  # Q and K differ
    np.testing.assert_array_equal(kernels[0][0], kernels[1][0])  # same seed, same weights


@pytest.mark.parametrize("return_scores", [False, True], ids=["fused_path", "scores_path"])
def test_large_logits_do_not_overflow_in_float16(return_scores: bool):
    query, value = _random((BATCH, 4, D_MODEL), 1) * 100, _random((BATCH, 5, D_MODEL), 2) * 100
    exact = _built_layer(query, value)
    keras.config.set_dtype_policy("mixed_float16")
    layer = MultiHeadAttention(num_heads=HEADS)
    layer(query, value)
    layer.set_weights(exact.get_weights())
    output = _call(layer, query, value, return_attention_scores=return_scores)[0]
    want, _ = _reference_mha(exact, query, value)
    assert np.all(np.isfinite(output))
    assert_close(output, want, dtype="float16")


@pytest.mark.parametrize("with_cache", [False, True], ids=["value", "projected_cache"])
def test_query_groups_share_their_row_of_keys_and_values(with_cache: bool):
    """`query_group_size=3`: rows 3b..3b+2 of the query attend over row b of the value (its
    mask, its projected cache), as if the value were repeated per query row (float64)."""
    group, query_len, key_len = 3, 2, 5
    rows = group * BATCH
    query = _random((rows, query_len, D_MODEL), seed=1)
    value = _random((BATCH, key_len, D_MODEL), seed=2)
    layer = _built_layer(query[:BATCH], value)
    value_mask = np.arange(key_len)[None, :] < np.array([[key_len], [3]])  # (B, Tk)
    query_mask = np.random.default_rng(3).random((rows, query_len)) < 0.8
    explicit = np.random.default_rng(4).random((rows, query_len, key_len)) < 0.7
    output, scores = _call(
        layer,
        query,
        value,
        query_mask=query_mask,
        value_mask=value_mask,
        attention_mask=explicit,
        cache=layer.compute_key_value_cache(value) if with_cache else None,
        query_group_size=group,
        return_attention_scores=True,
    )
    mask = reference.attention_mask(
        rows,
        query_len,
        key_len,
        query_padding=query_mask,
        key_padding=np.repeat(value_mask, group, axis=0),
        explicit=explicit,
    )
    expected, expected_scores = _reference_mha(
        layer, query, np.repeat(value, group, axis=0), mask=mask
    )
    assert_close(output, expected)
    assert_close(scores, expected_scores)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"use_causal_mask": True}, "use_causal_mask=True"),
        ({"append_to_cache": True}, "append_to_cache=True"),
        ({"query_group_size": 4}, "multiple of query_group_size=4 rows"),
        ({"query_group_size": 0}, "query_group_size=0"),
    ],
)
def test_query_groups_are_for_shared_keys_only(kwargs: dict, message: str):
    query, value = _random((6, 2, D_MODEL), seed=1), _random((BATCH, 5, D_MODEL), seed=2)
    layer = _built_layer(query[:BATCH], value)
    with pytest.raises(ValueError, match=message):
        layer(query, value, **{"query_group_size": 3, **kwargs})


def test_kernel_regularizer_adds_one_loss_per_projection():
    x = _random((BATCH, 4, D_MODEL), 1)
    layer = MultiHeadAttention(
        num_heads=HEADS, kernel_regularizer=keras.regularizers.L2(0.1), bias_regularizer="l1"
    )
    layer(x, x)
    denses = (layer.query_dense, layer.key_dense, layer.value_dense, layer.output_dense)
    expected = sum(
        0.1 * (reference.as_float64(d.kernel) ** 2).sum()
        + 0.01 * np.abs(reference.as_float64(d.bias)).sum()
        for d in denses
    )
    assert len(layer.losses) == 8
    total = sum(float(to_numpy(loss)) for loss in layer.losses)
    assert_close(total, expected)


def test_kernel_constraint_holds_after_a_training_step():
    inputs = keras.Input((4, D_MODEL))
    outputs = MultiHeadAttention(
        num_heads=HEADS, kernel_constraint=keras.constraints.NonNeg(), name="attention"
    )(inputs, inputs)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    x = _random((BATCH, 4, D_MODEL), 2)
    model.fit(x, -x, epochs=1, verbose=0)
    layer = model.get_layer("attention")
    for dense in (layer.query_dense, layer.key_dense, layer.value_dense, layer.output_dense):
        assert to_numpy(dense.kernel).min() >= 0.0


def test_lora_on_a_projection_starts_at_the_same_outputs():
    x = _random((BATCH, 4, D_MODEL), 3)
    layer = _built_layer(x, x)
    expected = _call(layer, x, x)[0]
    layer.value_dense.enable_lora(2)
    assert layer.value_dense.lora_enabled
    assert_close(_call(layer, x, x)[0], expected)
    layer.value_dense.lora_kernel_b.assign(np.ones(layer.value_dense.lora_kernel_b.shape))
    assert not np.allclose(_call(layer, x, x)[0], expected, atol=1e-3)


def test_old_output_dim_keyword_is_read_as_output_shape():
    layer = MultiHeadAttention.from_config({"num_heads": HEADS, "output_dim": 7})
    assert layer.output_shape == 7 and layer.output_dim == 7
    assert layer.get_config()["output_shape"] == 7 and "output_dim" not in layer.get_config()
    x = _random((BATCH, 4, D_MODEL), 4)
    assert tuple(layer(x, x).shape) == (BATCH, 4, 7)
    with pytest.raises(ValueError, match="output_dim=5"):
        MultiHeadAttention(num_heads=HEADS, output_shape=7, output_dim=5)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"attention_axes": (2,)}, "attention_axes=(2,)"), ({"output_shape": (3, 4)}, "output_shape")],
)
def test_unsupported_keras_arguments_are_named(arguments: dict, named: str):
    with pytest.raises(ValueError, match=re.escape(named)):
        MultiHeadAttention(num_heads=HEADS, **arguments)


def test_keras_style_arguments_are_accepted():
    layer = MultiHeadAttention(num_heads=HEADS, output_shape=(7,), attention_axes=(1,))
    x = _random((BATCH, 4, D_MODEL), 5)
    assert tuple(layer(x, x).shape) == (BATCH, 4, 7)
