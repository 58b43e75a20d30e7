"""Every public layer round-trips through `get_config`/`from_config` and `.keras` files."""

import inspect

import keras
import numpy as np
import pytest

import keras_attention as ka
from tests.layers.layer_cases import (
    CASE_IDS,
    D_MODEL,
    LAYER_CASES,
    VOCABULARY_SIZE,
    LayerCase,
    Seq2Seq,
    constructor_arguments,
    functional_model,
    output_list,
    translation_inputs,
    translation_model,
)
from tests.tolerances import assert_close


def config_value(value):
    """How an argument's value appears in `get_config()` (Keras objects are serialized)."""
    if isinstance(value, keras.initializers.Initializer):
        return keras.initializers.serialize(value)
    if isinstance(value, keras.regularizers.Regularizer):
        return keras.regularizers.serialize(value)
    if isinstance(value, keras.constraints.Constraint):
        return keras.constraints.serialize(value)
    if callable(value):
        return keras.activations.serialize(value)
    return value


def required_arguments(case: LayerCase) -> dict:
    """The case's values for the arguments that have no default."""
    parameters = constructor_arguments(case.layer_class)
    return {
        name: value
        for name, value in case.arguments().items()
        if parameters[name].default is inspect.Parameter.empty
    }


def perturb_weights(model: keras.Model, seed: int) -> None:
    """Replaces every weight by random values, so that a reload with freshly initialised
    weights could not give the same outputs."""
    rng = np.random.default_rng(seed)
    model.set_weights(
        [0.3 * rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()]
    )


def assert_reloads_equal(model: keras.Model, inputs: dict, path) -> keras.Model:
    """Saves `model` to `path`, loads it back and checks the outputs agree (`assert_close`)."""
    expected = output_list(model(inputs, training=False))
    keras.saving.save_model(model, path)
    loaded = keras.models.load_model(path)
    actual = output_list(loaded(inputs, training=False))
    assert len(actual) == len(expected)
    for want, have in zip(expected, actual, strict=True):
        assert_close(have, want)
    return loaded


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_table_gives_every_constructor_argument(case: LayerCase):
    parameters = constructor_arguments(case.layer_class)
    assert parameters, f"no constructor arguments found for {case.name}"
    assert sorted(case.arguments()) == sorted(parameters)


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_get_config_holds_every_argument_with_its_non_default_value(case: LayerCase):
    arguments = case.arguments()
    config = case.make_layer().get_config()
    default_config = case.layer_class(**required_arguments(case)).get_config()
    missing = sorted(set(constructor_arguments(case.layer_class)) - set(config))
    assert not missing, f"{case.name}.get_config() lacks {missing}"
    for name, value in arguments.items():
        assert config[name] == config_value(value), name
        if name not in required_arguments(case):
            assert config[name] != default_config[name], f"{name} is given its default value"


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_from_config_restores_every_argument(case: LayerCase):
    layer = case.make_layer()
    config = layer.get_config()
    restored = case.layer_class.from_config(config)
    assert type(restored) is case.layer_class
    assert restored.get_config() == config
    for name in case.arguments():
        assert config_value(getattr(restored, name)) == config[name], name
        assert config_value(getattr(restored, name)) == config_value(getattr(layer, name)), name


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_keras_file_round_trip_in_functional_model(case: LayerCase, tmp_path):
    model = functional_model(case)
    perturb_weights(model, seed=5)
    loaded = assert_reloads_equal(model, case.sample_inputs(), tmp_path / f"{case.name}.keras")
    restored_layer = next(layer for layer in loaded.layers if isinstance(layer, case.layer_class))
    original_layer = next(layer for layer in model.layers if isinstance(layer, case.layer_class))
    assert restored_layer.get_config() == original_layer.get_config()


def test_keras_file_round_trip_of_encoder_decoder_with_shared_embedding(tmp_path):
    model = translation_model()
    perturb_weights(model, seed=6)
    loaded = assert_reloads_equal(model, translation_inputs(), tmp_path / "translation.keras")
    assert len(loaded.weights) == len(model.weights)
    embedding = loaded.get_layer("shared_embedding")
    assert isinstance(embedding, ka.PositionalEmbedding)
    # One embedding matrix serves source, target and (reversed) logits.
    matrices = [w for w in loaded.weights if tuple(w.shape) == (VOCABULARY_SIZE, D_MODEL)]
    assert len(matrices) == 1
    assert matrices[0] is embedding.embeddings


def test_keras_file_round_trip_of_subclassed_model(tmp_path):
    model = Seq2Seq(name="seq2seq")
    inputs = translation_inputs()
    model(inputs)
    perturb_weights(model, seed=7)
    loaded = assert_reloads_equal(model, inputs, tmp_path / "seq2seq.keras")
    assert type(loaded) is Seq2Seq
    assert loaded.get_config() == model.get_config()
