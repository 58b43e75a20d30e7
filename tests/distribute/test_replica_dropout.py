"""`enable_replica_dropout` and `ReplicaDropout` off a strategy: Keras's own masks, configs and
files.

(Under a strategy with several replicas, tests/distribute/test_strategy.py checks that the replicas'
masks differ, where Keras's are identical, and that replica 0 draws one device's mask.)
"""

import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention.distribute.replica_dropout import (
    ReplicaDropout,
    ReplicaSeedGenerator,
    enable_replica_dropout,
)
from keras_attention.models import Transformer

REPOSITORY = Path(__file__).resolve().parents[2]


def inputs() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(4, 6, 8)).astype("float32")


def transformer_with_dropout() -> Transformer:
    keras.utils.set_random_seed(4)  # the same weights and generator seeds each time
    model = Transformer(
        30,
        num_encoder_layers=1,
        num_decoder_layers=1,
        d_model=16,
        num_heads=2,
        intermediate_dim=32,
        dropout=0.3,
        attention_dropout=0.3,
        activation_dropout=0.3,
    )
    model.build()
    return model


def seed_generators(model: keras.layers.Layer) -> list:
    return [g for layer in model._flatten_layers() for g in layer._seed_generators]


def test_an_enabled_dropout_layer_draws_keras_masks_on_one_device():
    ours = enable_replica_dropout(keras.layers.Dropout(0.3, seed=5))
    theirs = keras.layers.Dropout(0.3, seed=5)
    assert type(ours.seed_generator) is ReplicaSeedGenerator
    x = inputs()
    for _ in range(3):  # the seed advances alike, call after call
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(ours(x, training=True)),
            keras.ops.convert_to_numpy(theirs(x, training=True)),
        )
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(ours(x, training=False)), x)


def test_every_generator_of_a_model_is_made_the_replica_s_and_keeps_its_state():
    model = transformer_with_dropout()
    generators = seed_generators(model)
    states = [g.state for g in generators]
    # Embedding; encoder: attention, 2 residual, feed-forward; decoder: 2 attentions, 3
    # residual, feed-forward.
    assert len(generators) == 11
    assert enable_replica_dropout(model) is model
    assert all(type(g) is ReplicaSeedGenerator for g in generators)
    assert [g.state for g in generators] == states  # the variables a backup keeps
    assert type(model) is Transformer


def test_an_enabled_model_computes_what_a_plain_one_does_on_one_device():
    plain, ours = transformer_with_dropout(), transformer_with_dropout()
    config = ours.get_config()
    enable_replica_dropout(ours)
    assert ours.get_config() == config
    source, target = np.array([[5, 6, 7, 3]]), np.array([[2, 8, 9]])
    for _ in range(2):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(ours((source, target), training=True)),
            keras.ops.convert_to_numpy(plain((source, target), training=True)),
        )


def test_a_second_call_changes_nothing():
    layer = enable_replica_dropout(keras.layers.Dropout(0.5, seed=1))
    generator = layer.seed_generator
    assert enable_replica_dropout(layer).seed_generator is generator
    assert type(generator) is ReplicaSeedGenerator


def test_an_unbuilt_layer_and_a_non_layer_are_refused():
    model = Transformer(20, num_encoder_layers=1, num_decoder_layers=1, d_model=8, num_heads=2)
    with pytest.raises(ValueError, match=r"needs a built layer; 'transformer\w*' is not built"):
        enable_replica_dropout(model)
    with pytest.raises(TypeError, match="expected a Keras layer or model; got SeedGenerator"):
        enable_replica_dropout(keras.random.SeedGenerator(1))


def test_the_old_layer_draws_keras_masks_on_one_device():
    ours, theirs = ReplicaDropout(0.3, seed=5), keras.layers.Dropout(0.3, seed=5)
    x = inputs()
    for _ in range(2):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(ours(x, training=True)),
            keras.ops.convert_to_numpy(theirs(x, training=True)),
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
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == "keras_attention>ReplicaDropout"
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is ReplicaDropout
    assert restored.get_config() == layer.get_config()


def test_a_file_naming_the_old_layer_loads_after_importing_the_package(tmp_path: Path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), ReplicaDropout(0.5)])
    model.save(tmp_path / "old.keras")
    x = np.arange(8, dtype="float32").reshape(2, 4)
    np.save(tmp_path / "expected.npy", keras.ops.convert_to_numpy(model(x)))
    program = (
        "import sys, keras, numpy as np, keras_attention\n"
        "model = keras.models.load_model(sys.argv[1] + '/old.keras')\n"
        "assert type(model.layers[-1]).__name__ == 'ReplicaDropout', model.layers\n"
        "x = np.arange(8, dtype='float32').reshape(2, 4)\n"
        "np.testing.assert_array_equal(model(x), np.load(sys.argv[1] + '/expected.npy'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPOSITORY,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_a_bad_rate_is_refused(rate: float):
    with pytest.raises(ValueError, match="rate"):
        ReplicaDropout(rate)
