"""Learned positional embeddings (Table 3, row E) against their own rows, in NumPy."""

import keras
import numpy as np
import pytest

from keras_attention.layers import LearnedPositionalEncoding
from tests.conftest import to_numpy


def built(max_positions: int = 6, d_model: int = 4) -> LearnedPositionalEncoding:
    layer = LearnedPositionalEncoding(max_positions)
    layer.build((2, 3, d_model))
    return layer


@pytest.mark.parametrize("start_index", [0, 2, 5])
def test_rows_are_the_positions_and_the_last_row_serves_beyond(start_index: int):
    layer = built()
    x = np.zeros((2, 3, 4), "float32")
    table = to_numpy(layer.embeddings).astype(np.float64)
    rows = np.minimum(np.arange(start_index, start_index + 3), 5)
    output = to_numpy(layer(x, start_index=keras.ops.convert_to_tensor(start_index)))
    np.testing.assert_allclose(output, np.broadcast_to(table[rows], (2, 3, 4)), atol=1e-7)


def test_default_initializer_has_stddev_inverse_sqrt_d_model():
    table = to_numpy(built(max_positions=4096, d_model=16).embeddings)
    assert abs(table.std() - 16**-0.5) < 0.01 and abs(table.mean()) < 0.01


def test_the_rows_train():
    x = keras.Input((3, 4))
    model = keras.Model(x, LearnedPositionalEncoding(5)(x))
    model.compile("sgd", "mse")
    before = to_numpy(model.weights[0]).copy()
    model.fit(np.zeros((2, 3, 4)), np.ones((2, 3, 4)), epochs=1, verbose=0)
    after = to_numpy(model.weights[0])
    assert not np.allclose(before[:3], after[:3]) and np.allclose(before[3:], after[3:])


def test_config_round_trip():
    layer = LearnedPositionalEncoding(7, initializer="zeros", name="positions")
    restored = LearnedPositionalEncoding.from_config(layer.get_config())
    assert (restored.max_positions, restored.name) == (7, "positions")
    restored.build((1, 2, 3))
    np.testing.assert_array_equal(to_numpy(restored.embeddings), np.zeros((7, 3)))


@pytest.mark.parametrize("max_positions", [0, -1, 2.5])
def test_a_bad_max_positions_is_named(max_positions):
    with pytest.raises(ValueError, match="max_positions"):
        LearnedPositionalEncoding(max_positions)
