"""`enable_strategy_fixes` on one device: a plain model stays plain (the fixes under two
replicas and two workers are tested by tests/distribute/test_strategy.py and
tests/distribute/test_multi_worker.py, whose scripts apply them as a run does)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.distribute.strategy_fixes import enable_strategy_fixes
from keras_attention.models import Transformer


def tiny(dropout: float = 0.2) -> Transformer:
    keras.utils.set_random_seed(1)
    model = Transformer(
        20,
        num_encoder_layers=1,
        num_decoder_layers=1,
        d_model=8,
        num_heads=2,
        intermediate_dim=16,
        dropout=dropout,
    )
    model.build()
    return model


def test_on_one_device_nothing_is_applied():
    model = tiny()
    generators = [g for layer in model._flatten_layers() for g in layer._seed_generators]
    assert enable_strategy_fixes(model) is model
    assert enable_strategy_fixes(model, tf.distribute.get_strategy()) is model
    assert generators and all(type(g) is keras.random.SeedGenerator for g in generators)
    assert "_make_function" not in vars(model)
    assert "_maybe_symbolic_build" not in vars(model)


def test_on_one_device_fit_is_keras_own():
    plain, fixed = tiny(), enable_strategy_fixes(tiny())
    source = np.random.default_rng(0).integers(4, 20, (8, 5))
    target = np.random.default_rng(1).integers(4, 20, (8, 4))
    for model in (plain, fixed):
        model.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(True))
    plain_loss = plain.fit((source, target), target, batch_size=4, verbose=0).history["loss"]
    fixed_loss = fixed.fit((source, target), target, batch_size=4, verbose=0).history["loss"]
    assert fixed_loss == plain_loss
    for a, b in zip(plain.get_weights(), fixed.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_unbuilt_model_and_a_layer_are_refused():
    unbuilt = Transformer(20, num_encoder_layers=1, num_decoder_layers=1, d_model=8, num_heads=2)
    with pytest.raises(ValueError, match=r"needs a built model; 'transformer\w*' is not built"):
        enable_strategy_fixes(unbuilt)
    with pytest.raises(TypeError, match=r"expected a keras\.Model; got Dense"):
        enable_strategy_fixes(keras.layers.Dense(2))
