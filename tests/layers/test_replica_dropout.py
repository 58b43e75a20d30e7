"""`ReplicaDropout` and `replica_dropout.dropout` off a strategy: Keras's own masks.

(Under a strategy with several replicas, tests/distribute/test_strategy.py checks that the replicas'
masks differ, where Keras's are identical.)
"""

import keras
import numpy as np
import pytest

from keras_attention.layers import ReplicaDropout, replica_dropout


def inputs() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(4, 6, 8)).astype("float32")


def test_the_layer_draws_keras_masks_on_one_device():
    ours, theirs = ReplicaDropout(0.3, seed=5), keras.layers.Dropout(0.3, seed=5)
    x = inputs()
    for _ in range(3):  # the seed advances alike, call after call
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(ours(x, training=True)),
            keras.ops.convert_to_numpy(theirs(x, training=True)),
        )
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(ours(x, training=False)), x)


def test_the_function_draws_keras_masks_on_one_device():
    x = keras.ops.convert_to_tensor(inputs())
    ours = replica_dropout.dropout(x, 0.5, seed=keras.random.SeedGenerator(9))
    theirs = keras.random.dropout(x, 0.5, seed=keras.random.SeedGenerator(9))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(ours), keras.ops.convert_to_numpy(theirs)
    )
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(replica_dropout.dropout(x, 0.0, seed=3)), inputs()
    )


def test_kept_units_are_scaled_and_about_one_minus_rate_of_them_are_kept():
    rate = 0.25
    ones = np.ones((200, 500), "float32")
    out = keras.ops.convert_to_numpy(ReplicaDropout(rate, seed=1)(ones, training=True))
    expected = np.float64(1.0) / (1.0 - rate)
    kept = out != 0
    np.testing.assert_allclose(out[kept], expected, rtol=1e-6)
    # 100,000 Bernoulli(0.75) draws: the standard deviation of the fraction is 0.0014.
    assert abs(kept.mean() - (1.0 - rate)) < 0.01


def test_a_noise_shape_broadcasts_the_mask():
    out = ReplicaDropout(0.5, noise_shape=(None, 1, 8), seed=2)(np.ones((3, 5, 8)), training=True)
    out = keras.ops.convert_to_numpy(out)
    assert (out == out[:, :1, :]).all()  # the same mask at every position
    assert 0 < (out == 0).mean() < 1


def test_config_round_trip():
    layer = ReplicaDropout(0.2, noise_shape=(None, 1), seed=4, name="drop")
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is ReplicaDropout
    assert restored.get_config() == layer.get_config()


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_a_bad_rate_is_refused(rate: float):
    with pytest.raises(ValueError, match="rate"):
        ReplicaDropout(rate)
