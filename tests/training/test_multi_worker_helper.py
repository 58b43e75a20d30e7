"""`enable_multi_worker_fit` and `MultiWorkerFitMixin` off a cluster: nothing changes."""

from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention.models import Transformer
from keras_attention.training import MultiWorkerFitMixin, enable_multi_worker_fit


def dense_model() -> keras.Model:
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    return model


def data() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    return x, x.sum(axis=1, keepdims=True)


def test_on_one_device_fit_and_evaluate_are_keras_own():
    plain, patched = dense_model(), enable_multi_worker_fit(dense_model())
    x, y = data()
    plain_history = plain.fit(x, y, batch_size=8, epochs=2, verbose=0).history
    patched_history = patched.fit(x, y, batch_size=8, epochs=2, verbose=0).history
    assert patched_history == plain_history
    assert plain_history["loss"][1] < plain_history["loss"][0]
    for a, b in zip(plain.get_weights(), patched.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert patched.evaluate(x, y, verbose=0) == plain.evaluate(x, y, verbose=0)


def test_the_model_keeps_its_class_config_and_saved_file(tmp_path: Path):
    model = dense_model()
    config = model.get_config()
    assert enable_multi_worker_fit(model) is model
    assert type(model) is keras.Sequential
    assert model.get_config() == config
    model.save(tmp_path / "dense.keras")
    loaded = keras.models.load_model(tmp_path / "dense.keras")
    assert type(loaded) is keras.Sequential
    x, _ = data()
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


class MixedInRegression(MultiWorkerFitMixin, keras.Model):
    """A user's own subclassed model with the fix built in."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)

    def call(self, inputs):
        return self.dense(inputs)


def test_a_model_with_the_mixin_is_returned_untouched():
    model = MixedInRegression()
    assert enable_multi_worker_fit(model) is model
    assert "_make_function" not in vars(model)


def test_a_second_call_changes_nothing():
    model = enable_multi_worker_fit(dense_model())
    patched = vars(model)["_make_function"]
    assert enable_multi_worker_fit(model) is model
    assert vars(model)["_make_function"] is patched


def test_the_transformer_is_patched_like_any_model():
    model = Transformer(
        20, num_encoder_layers=1, num_decoder_layers=1, d_model=8, num_heads=2, intermediate_dim=16
    )
    assert not isinstance(model, MultiWorkerFitMixin)
    assert enable_multi_worker_fit(model) is model
    assert "_make_function" in vars(model) and "_maybe_symbolic_build" in vars(model)
    assert type(model) is Transformer


def test_only_keras_models_are_accepted():
    with pytest.raises(TypeError, match=r"expected a keras\.Model; got Dense"):
        enable_multi_worker_fit(keras.layers.Dense(2))
