"""A model whose attention projections are quantized saves to `.keras` and loads back
quantized, with the same outputs."""

import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from keras_attention.layers.quantized_sublayers import QUANTIZED_KEY, quantized_policies
from tests.conftest import to_numpy
from tests.tolerances import assert_close


def functional_attention() -> keras.Model:
    inputs = keras.Input((5, 16))
    outputs = MultiHeadAttention(num_heads=2, name="attention")(inputs, inputs)
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize("mode", ["int8", "int4", "float8"])
def test_a_quantized_attention_layer_reloads_quantized(mode: str, tmp_path):
    keras.utils.set_random_seed(1)
    model = functional_attention()
    x = np.random.default_rng(2).standard_normal((3, 5, 16)).astype("float32")
    model.quantize(mode)
    expected = to_numpy(model(x))
    model.save(tmp_path / "attention.keras")
    loaded = keras.models.load_model(tmp_path / "attention.keras")
    projection = loaded.get_layer("attention").query_dense
    assert projection.quantization_mode == mode
    assert_close(to_numpy(loaded(x)), expected)


def test_the_build_config_lists_the_quantized_projections():
    model = functional_attention()
    layer = model.get_layer("attention")
    assert QUANTIZED_KEY not in layer.get_build_config()
    model.quantize("int8")
    policies = layer.get_build_config()[QUANTIZED_KEY]
    assert sorted(policies) == ["attention_output", "key", "query", "value"]
    assert policies == quantized_policies(layer)
    key = policies["key"]
    assert keras.dtype_policies.deserialize(key["dtype_policy"]).name == "int8_from_float32"
    assert key["quantization_config"]["class_name"] == "Int8QuantizationConfig"


def test_a_weight_only_int8_layer_reloads_weight_only(tmp_path):
    keras.utils.set_random_seed(3)
    model = functional_attention()
    config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=None)
    model.quantize("int8", config=config)
    x = np.random.default_rng(4).standard_normal((3, 5, 16)).astype("float32")
    expected = to_numpy(model(x))
    model.save(tmp_path / "attention.keras")
    loaded = keras.models.load_model(tmp_path / "attention.keras")
    assert loaded.get_layer("attention").value_dense.inputs_quantizer is None
    assert_close(to_numpy(loaded(x)), expected)
