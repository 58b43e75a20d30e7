"""Scaled dot-product attention (Section 3.2.1) against a float64 NumPy reference."""

import keras
import numpy as np
import pytest

from keras_attention.layers import (
    ScaledDotProductAttention,
    masked_softmax,
    scaled_dot_product_attention,
)
from keras_attention.masks import keras_mask
from tests.conftest import to_numpy
from tests.layers import numpy_reference as reference
from tests.tolerances import assert_close


def _random(shape: tuple, seed: int) -> np.ndarray:
    """Standard-normal float32 values of `shape`."""
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _random_mask(shape: tuple, seed: int) -> np.ndarray:
    """A random boolean mask of `shape` (about two thirds `True`)."""
    return np.random.default_rng(seed).random(shape) < 0.65


def _reference_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(Q K^T * scale) V in float64; returns `(output, weights)`."""
    query, key, value = (np.asarray(t, dtype="float64") for t in (query, key, value))
    scale = 1.0 / np.sqrt(query.shape[-1]) if scale is None else scale
    weights = reference.masked_softmax(query @ np.swapaxes(key, -1, -2) * scale, mask)
    return weights @ value, weights


def _attend(
    use_layer: bool,
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    dropout: float = 0.0,
    training: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Runs the function or the layer with scores; returns NumPy `(output, weights)`."""
    if use_layer:
        layer = ScaledDotProductAttention(dropout=dropout, scale=scale, seed=7)
        output, weights = layer(
            query, key, value, mask=mask, training=training, return_attention_scores=True
        )
    else:
        output, weights = scaled_dot_product_attention(
            query,
            key,
            value,
            mask=mask,
            dropout=dropout,
            training=training,
            seed=7,
            scale=scale,
            return_attention_scores=True,
        )
    return to_numpy(output), to_numpy(weights)


IMPLEMENTATIONS = pytest.mark.parametrize("use_layer", [False, True], ids=["function", "layer"])

# (query shape, key/value leading shape, value depth, mask shape or None)
SHAPES = {
    "3d": ((2, 4, 8), (2, 5), 6, None),
    "3d_mask": ((2, 4, 8), (2, 5), 6, (2, 4, 5)),
    "4d": ((2, 3, 4, 8), (2, 3, 5), 6, None),
    "4d_mask": ((2, 3, 4, 8), (2, 3, 5), 6, (2, 3, 4, 5)),
    "4d_broadcast_mask": ((2, 3, 4, 8), (2, 3, 5), 6, (2, 1, 4, 5)),
}


@IMPLEMENTATIONS
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("scale", [None, 0.3], ids=["default_scale", "custom_scale"])
def test_matches_numpy_reference(use_layer: bool, shapes: tuple, scale: float | None):
    query_shape, key_lead, value_depth, mask_shape = shapes
    query = _random(query_shape, 0)
    key = _random((*key_lead, query_shape[-1]), 1)
    value = _random((*key_lead, value_depth), 2)
    mask = None if mask_shape is None else _random_mask(mask_shape, 3)
    output, weights = _attend(use_layer, query, key, value, mask=mask, scale=scale)
    want_output, want_weights = _reference_attention(query, key, value, mask=mask, scale=scale)
    assert_close(weights, want_weights)
    assert_close(output, want_output)


def test_without_scores_returns_the_same_output():
    query, key, value = _random((2, 4, 8), 0), _random((2, 5, 8), 1), _random((2, 5, 3), 2)
    output = scaled_dot_product_attention(query, key, value)
    layer_output = ScaledDotProductAttention()(query, key, value)
    want, _ = _reference_attention(query, key, value)
    assert_close(to_numpy(output), want)
    assert_close(to_numpy(layer_output), want)


@IMPLEMENTATIONS
def test_weights_are_a_distribution_over_allowed_keys(use_layer: bool):
    query, key, value = _random((2, 4, 8), 0), _random((2, 5, 8), 1), _random((2, 5, 6), 2)
    mask = _random_mask((2, 4, 5), 3)
    mask[0, 1, :] = False  # a query with no key to attend to
    mask[1, 2, :] = True
    output, weights = _attend(use_layer, query, key, value, mask=mask)
    assert np.all(np.isfinite(output)) and np.all(np.isfinite(weights))
    np.testing.assert_array_equal(weights[~mask], 0.0)
    has_key = mask.any(axis=-1)
    assert_close(weights.sum(axis=-1)[has_key], 1.0)
    np.testing.assert_array_equal(weights[0, 1], 0.0)
    np.testing.assert_array_equal(output[0, 1], 0.0)
    assert np.all(weights[mask] > 0)


@IMPLEMENTATIONS
def test_dropout_is_inactive_without_training(use_layer: bool):
    query, key, value = _random((2, 4, 8), 0), _random((2, 5, 8), 1), _random((2, 5, 6), 2)
    mask = _random_mask((2, 4, 5), 3)
    output, weights = _attend(use_layer, query, key, value, mask=mask, dropout=0.5)
    want_output, want_weights = _reference_attention(query, key, value, mask=mask)
    assert_close(output, want_output)
    assert_close(weights, want_weights)


@IMPLEMENTATIONS
def test_dropout_drops_weights_when_training(use_layer: bool):
    rate = 0.5
    query, key = _random((2, 6, 8), 0), _random((2, 6, 8), 1)
    # With the identity as values, the output is the (dropped-out) attention weights.
    value = np.broadcast_to(np.eye(6, dtype="float32"), (2, 6, 6))
    output, weights = _attend(use_layer, query, key, value, dropout=rate, training=True)
    _, want_weights = _reference_attention(query, key, value)
    assert np.all(np.isfinite(output))
    assert_close(weights, want_weights)  # scores are pre-dropout
    dropped = output == 0.0
    assert 0 < dropped.sum() < dropped.size
    assert_close(output[~dropped], want_weights[~dropped] / (1 - rate))


def test_masked_softmax_is_safe_in_float16():
    scores = np.array([[[60000.0, -60000.0, 3.0], [1.0, 2.0, 3.0]]], dtype="float16")
    mask = np.array([[[True, False, True], [False, False, False]]])
    weights = to_numpy(masked_softmax(keras.ops.convert_to_tensor(scores), mask))
    assert weights.dtype == np.float16
    want = reference.masked_softmax(scores.astype("float64"), mask)
    assert_close(weights, want)


# (function arguments, message that names the argument)
FUNCTION_ERRORS = {
    "depth_mismatch": ({"key": _random((2, 5, 7), 1)}, r"query and key .*depth"),
    "length_mismatch": ({"value": _random((2, 4, 6), 2)}, r"key and value .*length"),
    "mask_shape": ({"mask": np.ones((2, 4, 3), bool)}, r"mask\.shape=\(2, 4, 3\)"),
    "mask_rank": ({"mask": np.ones((5,), bool)}, r"mask\.shape=\(5,\)"),
    "negative_dropout": ({"dropout": -0.1}, r"dropout=-0\.1"),
    "dropout_one": ({"dropout": 1.0}, r"dropout=1\.0"),
    "zero_scale": ({"scale": 0.0}, r"scale=0\.0"),
    "negative_scale": ({"scale": -1.0}, r"scale=-1\.0"),
}


@pytest.mark.parametrize("arguments, message", FUNCTION_ERRORS.values(), ids=FUNCTION_ERRORS.keys())
def test_function_rejects_bad_arguments(arguments: dict, message: str):
    inputs = {"query": _random((2, 4, 8), 0), "key": _random((2, 5, 8), 1)}
    inputs["value"] = _random((2, 5, 6), 2)
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(**{**inputs, **arguments})


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"dropout": -0.1}, r"dropout=-0\.1"),
        ({"dropout": 1.0}, r"dropout=1\.0"),
        ({"scale": 0.0}, r"scale=0\.0"),
        ({"scale": -2.0}, r"scale=-2\.0"),
    ],
)
def test_layer_rejects_bad_arguments(arguments: dict, message: str):
    with pytest.raises(ValueError, match=message):
        ScaledDotProductAttention(**arguments)


def test_layer_rejects_bad_call_inputs():
    layer = ScaledDotProductAttention()
    query, key = _random((2, 4, 8), 0), _random((2, 5, 8), 1)
    with pytest.raises(ValueError, match=r"mask\.shape"):
        layer(query, key, key, mask=np.ones((2, 5, 4), bool))


def test_layer_symbolic_shapes():
    query, key = keras.Input((4, 8)), keras.Input((5, 8))
    value = keras.Input((5, 6))
    output, weights = ScaledDotProductAttention()(query, key, value, return_attention_scores=True)
    assert tuple(output.shape) == (None, 4, 6)
    assert tuple(weights.shape) == (None, 4, 5)


def _padded_tokens() -> np.ndarray:
    """`(2, 5)` token ids, 0 = padding: 2 and 3 real tokens."""
    return np.array([[3, 1, 0, 0, 0], [2, 4, 6, 0, 0]])


@pytest.mark.parametrize("with_explicit_mask", [False, True], ids=["keras_mask", "and_mask"])
def test_layer_applies_keras_masks(with_explicit_mask: bool):
    tokens = _padded_tokens()
    embedded = keras.layers.Embedding(8, 6, mask_zero=True)(tokens)
    plain = to_numpy(embedded)
    query = _random((2, 4, 6), 1)
    explicit = _random_mask((2, 4, 5), 3) if with_explicit_mask else None
    output, weights = ScaledDotProductAttention()(
        query, embedded, embedded, mask=explicit, return_attention_scores=True
    )
    allowed = np.broadcast_to((tokens != 0)[:, None, :], (2, 4, 5))
    if with_explicit_mask:
        allowed = allowed & explicit
    want_output, want_weights = _reference_attention(query, plain, plain, mask=allowed)
    assert_close(to_numpy(weights), want_weights)
    assert_close(to_numpy(output), want_output)


def test_layer_keeps_the_query_keras_mask_and_zeroes_padded_queries():
    tokens = _padded_tokens()
    embedded = keras.layers.Embedding(8, 6, mask_zero=True)(tokens)
    plain = to_numpy(embedded)
    explicit = np.tril(np.ones((2, 5, 5), bool))
    output = ScaledDotProductAttention()(embedded, embedded, embedded, mask=explicit)
    np.testing.assert_array_equal(to_numpy(keras_mask(output)), tokens != 0)
    real = tokens != 0
    allowed = explicit & real[:, None, :] & real[:, :, None]
    want, _ = _reference_attention(plain, plain, plain, mask=allowed)
    assert_close(to_numpy(output), want)
    np.testing.assert_array_equal(to_numpy(output)[~real], 0.0)


def test_layer_padding_masks_broadcast_over_heads():
    query, key, value = _random((2, 3, 4, 8), 0), _random((2, 3, 5, 8), 1), _random((2, 3, 5, 6), 2)
    query_mask = np.array([[True, True, True, False], [True, True, True, True]])
    value_mask = np.array([[True, True, False, False, False], [True, True, True, True, False]])
    output, weights = ScaledDotProductAttention()(
        query,
        key,
        value,
        query_mask=query_mask,
        value_mask=value_mask,
        return_attention_scores=True,
    )
    allowed = (query_mask[:, :, None] & value_mask[:, None, :])[:, None]  # (B, 1, Tq, Tk)
    want_output, want_weights = _reference_attention(query, key, value, mask=allowed)
    assert_close(to_numpy(weights), want_weights)
    assert_close(to_numpy(output), want_output)


@pytest.mark.parametrize("name", ["query_mask", "value_mask", "key_mask"])
def test_layer_rejects_padding_masks_of_the_wrong_shape(name: str):
    query, key = _random((2, 4, 8), 0), _random((2, 5, 8), 1)
    with pytest.raises(ValueError, match=rf"{name}\.shape=\(2, 3\)"):
        ScaledDotProductAttention()(query, key, key, **{name: np.ones((2, 3), bool)})


def test_large_float16_logits_do_not_overflow():
    # |Q K^T| reaches about 1e5, beyond float16's largest value (65504).
    query, key = [
        (np.abs(_random((2, 3, 8), seed)) * 100 + 50).astype("float16") for seed in (0, 1)
    ]
    value = _random((2, 3, 4), 2).astype("float16")
    output, weights = _attend(False, query, key, value)
    assert output.dtype == weights.dtype == np.float16
    want_output, want_weights = _reference_attention(query, key, value)
    assert_close(weights, want_weights)
    assert_close(output, want_output)
