"""`take_in_groups` and `take_along_rows` against NumPy indexing written here."""

import numpy as np
import pytest
from keras import ops

from keras_attention.decoding.grouped_take import take_along_rows, take_in_groups


@pytest.mark.parametrize("axis", [0, 1])
def test_take_in_groups_picks_rows_within_each_group(axis):
    rng = np.random.default_rng(0)
    groups, size, kept = 3, 4, 5
    shape = (2, groups * size, 6) if axis else (groups * size, 6)
    tensor = rng.normal(size=shape).astype("float32")  # float32: JAX's default precision
    indices = rng.integers(0, size, size=(groups, kept))
    expected_rows = [b * size + i for b in range(groups) for i in indices[b]]
    expected = np.take(tensor, expected_rows, axis=axis)
    tensor_in, indices_in = ops.convert_to_tensor(tensor), ops.convert_to_tensor(indices)
    result = take_in_groups(tensor_in, indices_in, size, axis)
    np.testing.assert_array_equal(ops.convert_to_numpy(result), expected)


@pytest.mark.parametrize("trailing", [(), (7,), (2, 3)])
def test_take_along_rows_matches_take_along_axis(trailing):
    rng = np.random.default_rng(1)
    tensor = rng.normal(size=(3, 5, *trailing)).astype("float32")
    indices = rng.integers(0, 5, size=(3, 4))
    expected = np.stack([tensor[b, indices[b]] for b in range(3)])
    result = take_along_rows(ops.convert_to_tensor(tensor), ops.convert_to_tensor(indices))
    assert tuple(result.shape) == (3, 4, *trailing)
    np.testing.assert_array_equal(ops.convert_to_numpy(result), expected)


def test_take_along_rows_in_a_traced_function_with_unknown_sizes():
    tf = pytest.importorskip("tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("a TensorFlow graph with unknown sizes")
    spec = [tf.TensorSpec([None, None, None], tf.float32), tf.TensorSpec([None, None], tf.int32)]
    function = tf.function(take_along_rows, input_signature=spec)
    tensor = np.arange(2 * 3 * 4, dtype="float32").reshape(2, 3, 4)
    indices = np.array([[2, 0], [1, 1]], dtype="int32")
    np.testing.assert_array_equal(
        function(tensor, indices).numpy(), np.stack([tensor[b, indices[b]] for b in range(2)])
    )
