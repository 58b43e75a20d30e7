"""Mask helpers (Section 3.2.3): boolean, `True` = may attend, compared with NumPy."""

import keras
import numpy as np
import pytest

from keras_attention import masks
from tests.conftest import to_numpy

TOKEN_IDS = np.array([[4, 9, 2, 0, 0], [7, 0, 0, 0, 0], [1, 3, 5, 8, 6]])


def reference_causal_mask(query_length: int, key_length: int, offset: int) -> np.ndarray:
    """`mask[q, k]` is True when key position `k` is not after query position `offset + q`."""
    mask = np.zeros((query_length, key_length), dtype=bool)
    for query in range(query_length):
        for key in range(key_length):
            mask[query, key] = key <= offset + query
    return mask


def as_bool_array(mask) -> np.ndarray:
    """A mask as a NumPy array, checking that it is boolean."""
    assert keras.backend.standardize_dtype(mask.dtype) == "bool"
    return to_numpy(mask)


@pytest.mark.parametrize("pad_id", [0, 5])
def test_padding_mask_marks_real_tokens(pad_id):
    token_ids = np.where(TOKEN_IDS == 0, pad_id, TOKEN_IDS + 5)
    mask = as_bool_array(masks.padding_mask(token_ids, pad_id=pad_id))
    np.testing.assert_array_equal(mask, token_ids != pad_id)
    assert mask[0].tolist() == [True, True, True, False, False]


def test_padding_mask_default_pad_id_is_zero():
    mask = as_bool_array(masks.padding_mask(keras.ops.convert_to_tensor(TOKEN_IDS, "int32")))
    np.testing.assert_array_equal(mask, TOKEN_IDS != 0)


@pytest.mark.parametrize(
    "query_length, key_length, offset",
    [(1, None, 0), (4, None, 0), (3, 3, 0), (2, 6, 3), (1, 7, 6), (3, 8, 2), (5, 3, 0)],
)
def test_causal_mask_matches_loop(query_length, key_length, offset):
    mask = as_bool_array(masks.causal_mask(query_length, key_length, offset))
    expected_keys = query_length if key_length is None else key_length
    np.testing.assert_array_equal(mask, reference_causal_mask(query_length, expected_keys, offset))


def test_causal_mask_accepts_scalar_tensors():
    tensor = keras.ops.convert_to_tensor
    mask = as_bool_array(masks.causal_mask(tensor(2, "int32"), tensor(5, "int32"), tensor(3)))
    np.testing.assert_array_equal(mask, reference_causal_mask(2, 5, 3))


def test_causal_mask_with_offset_equals_rows_of_the_full_mask():
    full = as_bool_array(masks.causal_mask(6))
    for offset in range(6):
        step = as_bool_array(masks.causal_mask(1, 6, offset))
        np.testing.assert_array_equal(step, full[offset : offset + 1])


def test_merge_masks_skips_none():
    mask = np.array([[True, False, True]])
    np.testing.assert_array_equal(as_bool_array(masks.merge_masks(None, mask, None)), mask)
    assert masks.merge_masks() is None
    assert masks.merge_masks(None, None) is None


def test_merge_masks_is_a_broadcasting_logical_and():
    rng = np.random.default_rng(0)
    padding = rng.random((3, 1, 4)) > 0.3  # (B, 1, K)
    causal = reference_causal_mask(2, 4, 2)  # (Q, K)
    explicit = rng.random((3, 2, 1)) > 0.3  # (B, Q, 1)
    merged = as_bool_array(masks.merge_masks(padding, causal, explicit))
    assert merged.shape == (3, 2, 4)
    np.testing.assert_array_equal(merged, padding & causal & explicit)


def test_merge_masks_casts_integer_masks_to_bool():
    merged = as_bool_array(masks.merge_masks(np.array([1, 0, 1, 1]), np.array([1, 1, 0, 1])))
    np.testing.assert_array_equal(merged, [True, False, False, True])


@pytest.mark.parametrize("use_query, use_key", [(True, True), (True, False), (False, True)])
def test_attention_mask_from_padding(use_query, use_key):
    query_padding = np.array([[True, True, False], [True, False, False]])  # (B, Q)
    key_padding = np.array([[True, False, True, True], [True, True, False, False]])  # (B, K)
    mask = as_bool_array(
        masks.attention_mask_from_padding(
            query_padding if use_query else None, key_padding if use_key else None
        )
    )
    expected = np.ones((2, 3, 4), bool)
    if use_query:
        expected &= query_padding[:, :, None]
    if use_key:
        expected &= key_padding[:, None, :]
    np.testing.assert_array_equal(np.broadcast_to(mask, (2, 3, 4)), expected)
    for axis, used in ((1, use_query), (2, use_key)):
        assert mask.shape[axis] == (expected.shape[axis] if used else 1)


def test_attention_mask_from_padding_without_masks_is_none():
    assert masks.attention_mask_from_padding() is None


@pytest.mark.parametrize(
    "shape, expected",
    [
        ((2, 3, 4), (2, 3, 4)),
        ((1, 3, 4), (2, 3, 4)),
        ((2, 1, 4), (2, 3, 4)),
        ((1, 1, 1), (2, 3, 4)),
        ((2, 7, 4), (2, None, 4)),
        ((2, 4), (2, 4)),
    ],
)
def test_check_mask_shape_accepts_matching_and_broadcastable_shapes(shape, expected):
    masks.check_mask_shape("attention_mask", np.ones(shape, bool), expected)


def test_check_mask_shape_accepts_none_and_unknown_dimensions():
    masks.check_mask_shape("attention_mask", None, (2, 3, 4))
    symbolic = keras.KerasTensor((None, 3, None), dtype="bool")
    masks.check_mask_shape("attention_mask", symbolic, (2, 3, 4))


@pytest.mark.parametrize(
    "name, shape, expected",
    [
        ("attention_mask", (2, 3, 5), (2, 3, 4)),
        ("attention_mask", (3, 3, 4), (2, 3, 4)),
        ("attention_mask", (2, 2, 4), (2, 3, 4)),
        ("attention_mask", (3, 4), (2, 3, 4)),
        ("attention_mask", (1, 2, 3, 4), (2, 3, 4)),
        ("padding_mask", (2, 6), (2, 5)),
    ],
)
def test_check_mask_shape_rejects_wrong_shapes_naming_the_argument(name, shape, expected):
    with pytest.raises(ValueError, match=rf"{name}.*{name}\.shape=\({shape[0]}, "):
        masks.check_mask_shape(name, np.ones(shape, bool), expected)


def test_keras_mask_reads_the_mask_set_by_mask_zero():
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(TOKEN_IDS)
    np.testing.assert_array_equal(to_numpy(masks.keras_mask(embedded)), TOKEN_IDS != 0)


def test_keras_mask_is_none_without_a_mask():
    assert masks.keras_mask(keras.layers.Embedding(10, 4)(TOKEN_IDS)) is None
    assert masks.keras_mask(keras.ops.convert_to_tensor(TOKEN_IDS)) is None
    assert masks.keras_mask(TOKEN_IDS) is None


@pytest.mark.parametrize("radius", [0, 1, 3, 9])
def test_neighbourhood_mask_matches_the_distance_rule(radius: int):
    length = 7
    want = np.abs(np.arange(length)[:, None] - np.arange(length)[None, :]) <= radius
    np.testing.assert_array_equal(to_numpy(masks.neighbourhood_mask(length, radius)), want)


@pytest.mark.parametrize("radius", [-1, 1.5, True])
def test_neighbourhood_mask_names_a_bad_radius(radius):
    with pytest.raises(ValueError, match="radius must be an int >= 0"):
        masks.neighbourhood_mask(4, radius)
