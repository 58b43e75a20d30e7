"""SinusoidalPositionalEncoding against the paper's formula (Section 3.5) in float64 NumPy."""

import math
import warnings

import keras
import numpy as np
import pytest

from keras_attention.layers import SinusoidalPositionalEncoding
from keras_attention.masks import keras_mask
from tests.conftest import to_numpy
from tests.tolerances import assert_close


def reference_encoding(
    num_positions: int, d_model: int, start_index: int = 0, max_wavelength: float = 10000.0
) -> np.ndarray:
    """PE rows `start_index .. start_index + num_positions - 1`, written as in the paper:

    `PE(pos, 2i) = sin(pos / max_wavelength^(2i / d_model))` and
    `PE(pos, 2i + 1) = cos(pos / max_wavelength^(2i / d_model))`.
    """
    table = np.zeros((num_positions, d_model), dtype=np.float64)
    for row in range(num_positions):
        pos = start_index + row
        for i in range((d_model + 1) // 2):
            angle = pos / max_wavelength ** (2 * i / d_model)
            table[row, 2 * i] = math.sin(angle)
            if 2 * i + 1 < d_model:
                table[row, 2 * i + 1] = math.cos(angle)
    return table


def encode(shape: tuple, start_index=0, **layer_kwargs) -> np.ndarray:
    """Runs a fresh layer on zeros of `shape` and returns the encoding as NumPy."""
    layer = SinusoidalPositionalEncoding(**layer_kwargs)
    return to_numpy(layer(np.zeros(shape, "float32"), start_index=start_index))


@pytest.mark.parametrize("d_model", [2, 5, 8, 13, 32])
def test_matches_paper_formula_for_even_and_odd_d_model(d_model):
    batch, seq_len = 2, 8
    encoding = encode((batch, seq_len, d_model))
    assert encoding.shape == (batch, seq_len, d_model)
    expected = reference_encoding(seq_len, d_model)
    for row in encoding:
        assert_close(row, expected)


@pytest.mark.parametrize("as_tensor", [False, True], ids=["int", "tensor"])
@pytest.mark.parametrize("start_index", [1, 5, 23])
def test_start_index_gives_later_rows_of_the_full_table(start_index, as_tensor):
    seq_len, d_model = 4, 10
    start = keras.ops.convert_to_tensor(start_index, "int32") if as_tensor else start_index
    encoding = encode((1, seq_len, d_model), start_index=start)[0]
    full_table = reference_encoding(start_index + seq_len, d_model)
    assert_close(encoding, full_table[start_index:])
    layer_full_table = encode((1, start_index + seq_len, d_model))[0]
    assert_close(encoding, layer_full_table[start_index:])


@pytest.mark.parametrize("max_wavelength", [10.0, 250.0, 1e6])
@pytest.mark.parametrize("d_model", [6, 7])
def test_custom_max_wavelength(max_wavelength, d_model):
    seq_len = 8
    encoding = encode((1, seq_len, d_model), max_wavelength=max_wavelength)[0]
    expected = reference_encoding(seq_len, d_model, max_wavelength=max_wavelength)
    assert_close(encoding, expected)


def test_output_is_broadcast_to_input_shape_and_ignores_input_values():
    inputs = np.random.default_rng(0).normal(size=(3, 5, 6)).astype("float32")
    layer = SinusoidalPositionalEncoding()
    encoding = to_numpy(layer(inputs))
    assert encoding.shape == inputs.shape
    assert tuple(layer.compute_output_shape(inputs.shape)) == inputs.shape
    expected = np.broadcast_to(reference_encoding(5, 6), inputs.shape)
    assert_close(encoding, expected)


def test_keras_mask_passes_through_without_warning():
    inputs = np.ones((2, 4, 6), "float32")
    inputs[0, 2:] = 0.0
    masked = keras.layers.Masking(mask_value=0.0)(inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        encoding = SinusoidalPositionalEncoding()(masked)
    np.testing.assert_array_equal(to_numpy(keras_mask(encoding)), inputs.any(axis=-1))


def test_symbolic_call_with_unknown_sequence_length():
    inputs = keras.Input(shape=(None, 8))
    model = keras.Model(inputs, SinusoidalPositionalEncoding()(inputs))
    encoding = to_numpy(model(np.zeros((2, 7, 8), "float32")))
    assert_close(encoding, np.broadcast_to(reference_encoding(7, 8), (2, 7, 8)))


def test_output_has_the_layers_compute_dtype():
    layer = SinusoidalPositionalEncoding(dtype="mixed_float16")
    encoding = layer(np.zeros((1, 6, 8), "float32"))
    assert keras.backend.standardize_dtype(encoding.dtype) == "float16"
    assert_close(encoding, reference_encoding(6, 8)[None])


@pytest.mark.parametrize("max_wavelength", [0, 0.0, -1.0, -10000])
def test_non_positive_max_wavelength_raises(max_wavelength):
    with pytest.raises(ValueError, match="max_wavelength"):
        SinusoidalPositionalEncoding(max_wavelength=max_wavelength)
