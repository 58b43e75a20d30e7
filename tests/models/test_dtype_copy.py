"""`copy_with_dtype`: a Transformer's weights in a copy that computes in another dtype."""

import keras
import numpy as np
import pytest

from keras_attention.models import Transformer, copy_with_dtype
from tests.conftest import to_numpy
from tests.tolerances import assert_close

TINY = dict(num_encoder_layers=1, num_decoder_layers=1, d_model=16, num_heads=2,
            intermediate_dim=32, dropout=0.0)  # fmt: skip


@pytest.fixture
def mixed_model():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = Transformer(30, **TINY)
        model.build()
    finally:
        keras.config.set_dtype_policy(previous)
    return model


def test_the_copy_computes_in_float32_with_the_same_weights(mixed_model):
    copy = copy_with_dtype(mixed_model)
    assert mixed_model.compute_dtype == "bfloat16" and copy.compute_dtype == "float32"
    assert {layer.compute_dtype for layer in copy._flatten_layers()} == {"float32"}
    for held, original in zip(copy.get_weights(), mixed_model.get_weights(), strict=True):
        np.testing.assert_array_equal(held, original)
    source = np.array([[5, 6, 7, 2, 0]], "int32")
    target = np.array([[1, 8, 9]], "int32")
    logits = to_numpy(copy((source, target)))
    assert logits.dtype == np.float32
    # The same weights in a float32 model built from scratch give the same logits.
    fresh = Transformer(30, **TINY)
    fresh.build()
    fresh.set_weights(mixed_model.get_weights())
    assert_close(logits, fresh((source, target)))
    # bfloat16 logits differ from them: the copy did change how the model computes.
    assert np.max(np.abs(to_numpy(mixed_model((source, target))).astype("float32") - logits)) > 0


def test_an_unbuilt_model_is_refused():
    with pytest.raises(ValueError, match="built model"):
        copy_with_dtype(Transformer(30, **TINY))
