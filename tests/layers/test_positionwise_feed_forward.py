"""PositionwiseFeedForward (Section 3.3, Equation 2) against a float64 NumPy reference."""

import math
from collections.abc import Callable

import keras
import numpy as np
import pytest

from keras_attention.layers import PositionwiseFeedForward
from keras_attention.masks import keras_mask
from tests.conftest import to_numpy
from tests.tolerances import assert_close

D_MODEL, D_FF = 8, 16


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, x)


def exact_gelu(x: np.ndarray) -> np.ndarray:
    """`x * Phi(x)` with the exact normal CDF."""
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def random_inputs(shape: tuple = (2, 5, D_MODEL), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def as_float64(variable) -> np.ndarray | float:
    """A weight as float64 NumPy; a missing bias (`None`) reads as 0."""
    return 0.0 if variable is None else to_numpy(variable).astype(np.float64)


def reference_ffn(
    layer: PositionwiseFeedForward, x: np.ndarray, activation: Callable = relu
) -> np.ndarray:
    """`activation(x W1 + b1) W2 + b2` in float64, from the layer's own weights."""
    inner, output = layer.inner_dense, layer.output_dense
    hidden = activation(x.astype(np.float64) @ as_float64(inner.kernel) + as_float64(inner.bias))
    return hidden @ as_float64(output.kernel) + as_float64(output.bias)


def feed_forward(**kwargs) -> PositionwiseFeedForward:
    """A layer with non-zero random biases, so that the biases are checked too."""
    kwargs.setdefault("bias_initializer", keras.initializers.RandomNormal(stddev=0.5))
    return PositionwiseFeedForward(D_FF, **kwargs)


@pytest.mark.parametrize("activation, reference_activation", [("relu", relu), ("gelu", exact_gelu)])
def test_matches_equation_2(activation, reference_activation):
    layer = feed_forward(activation=activation)
    x = random_inputs()
    output = to_numpy(layer(x))
    assert output.shape == x.shape
    expected = reference_ffn(layer, x, reference_activation)
    assert_close(output, expected)


@pytest.mark.parametrize("shape", [(3, D_MODEL), (2, 2, 3, D_MODEL)])
def test_any_number_of_leading_dimensions(shape):
    layer = feed_forward()
    x = random_inputs(shape)
    assert_close(to_numpy(layer(x)), reference_ffn(layer, x))


def test_output_dim_overrides_the_input_size():
    layer = feed_forward(output_dim=5)
    x = random_inputs()
    output = to_numpy(layer(x))
    assert output.shape == (2, 5, 5)
    assert tuple(layer.compute_output_shape(x.shape)) == (2, 5, 5)
    assert_close(output, reference_ffn(layer, x))


def test_without_biases():
    layer = feed_forward(use_bias=False)
    x = random_inputs()
    output = to_numpy(layer(x))
    assert layer.inner_dense.bias is None and layer.output_dense.bias is None
    assert len(layer.weights) == 2
    assert_close(output, reference_ffn(layer, x))


@pytest.mark.parametrize("batch_index, position", [(0, 0), (1, 3), (1, 4)])
def test_each_position_is_transformed_independently(batch_index, position):
    layer = feed_forward()
    x = random_inputs()
    changed = x.copy()
    changed[batch_index, position] += random_inputs((D_MODEL,), seed=1)
    before, after = to_numpy(layer(x)), to_numpy(layer(changed))
    others = np.ones(x.shape[:-1], bool)
    others[batch_index, position] = False
    np.testing.assert_array_equal(after[others], before[others])
    assert not np.allclose(after[batch_index, position], before[batch_index, position])


def test_keras_mask_passes_through():
    x = random_inputs()
    x[0, 3:] = 0.0
    x[1, 1] = 0.0
    masked = keras.layers.Masking(mask_value=0.0)(x)
    output = feed_forward()(masked)
    np.testing.assert_array_equal(to_numpy(keras_mask(output)), x.any(axis=-1))


@pytest.mark.parametrize("training", [False, None])
def test_no_dropout_at_inference(training):
    layer = feed_forward(dropout=0.5)
    x = random_inputs()
    output = to_numpy(layer(x, training=training))
    assert_close(output, reference_ffn(layer, x))


def test_dropout_in_training_acts_on_the_inner_activation():
    """With W2 = I and b2 = 1 the output is `dropout(relu(x W1 + b1)) + 1`; dropout on the
    output instead would leave zeros (not ones) where it drops."""
    rate = 0.5
    layer = PositionwiseFeedForward(D_FF, dropout=rate, output_dim=D_FF)
    x = random_inputs()
    layer.build(x.shape)
    layer.output_dense.kernel.assign(np.eye(D_FF, dtype="float32"))
    layer.output_dense.bias.assign(np.ones(D_FF, "float32"))
    inner = relu(x.astype(np.float64) @ as_float64(layer.inner_dense.kernel))
    dropped_inner = to_numpy(layer(x, training=True)).astype(np.float64) - 1.0
    kept = np.abs(dropped_inner) > 1e-6
    assert 0 < kept[inner > 0].mean() < 1
    assert_close(dropped_inner[kept], inner[kept] / (1 - rate))
    assert_close(dropped_inner[~kept], 0.0)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"intermediate_dim": 0}, "intermediate_dim"),
        ({"intermediate_dim": -4}, "intermediate_dim"),
        ({"intermediate_dim": 2.0}, "intermediate_dim"),
        ({"dropout": -0.5}, "dropout"),
        ({"dropout": 1.0}, "dropout"),
        ({"output_dim": 0}, "output_dim"),
        ({"output_dim": -1}, "output_dim"),
        ({"output_dim": 3.5}, "output_dim"),
    ],
)
def test_invalid_arguments_raise_value_error_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PositionwiseFeedForward(**{"intermediate_dim": D_FF, **kwargs})
