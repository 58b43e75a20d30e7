"""`write_positions` against NumPy slice assignment."""

import keras
import numpy as np
import pytest

from keras_attention.core.sequence_buffer import write_positions
from tests.conftest import to_numpy


@pytest.mark.parametrize(
    ("shape", "start", "count"),
    [((2, 7), 0, 1), ((2, 7), 6, 1), ((2, 7, 3, 4), 2, 3), ((2, 7, 3, 4), 4, 1), ((1, 5, 2), 0, 5)],
)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_writes_exactly_the_given_positions(shape: tuple, start: int, count: int, as_tensor: bool):
    rng = np.random.default_rng(0)
    buffer = rng.normal(size=shape).astype("float32")
    update = rng.normal(size=(shape[0], count, *shape[2:])).astype("float32")
    want = buffer.copy()
    want[:, start : start + count] = update
    index = keras.ops.convert_to_tensor(start, "int32") if as_tensor else start
    np.testing.assert_array_equal(to_numpy(write_positions(buffer, index, update)), want)


def test_integer_buffers_keep_their_dtype():
    buffer = np.zeros((2, 4), "int32")
    result = write_positions(buffer, 1, np.array([[7], [8]], "int32"))
    np.testing.assert_array_equal(to_numpy(result), [[0, 7, 0, 0], [0, 8, 0, 0]])
    assert keras.backend.standardize_dtype(result.dtype) == "int32"


@pytest.mark.parametrize("count", [1, 2])
def test_writes_along_another_axis(count: int):
    rng = np.random.default_rng(1)
    buffer = rng.normal(size=(2, 2, 6, 3)).astype("float32")
    update = rng.normal(size=(2, 2, count, 3)).astype("float32")
    want = buffer.copy()
    want[:, :, 3 : 3 + count] = update
    np.testing.assert_array_equal(to_numpy(write_positions(buffer, 3, update, axis=2)), want)
