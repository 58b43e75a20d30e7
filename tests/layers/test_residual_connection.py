"""ResidualConnection (Section 3.1) against a float64 NumPy reference, post-LN and pre-LN."""

import keras
import numpy as np
import pytest

from keras_attention.layers.residual_connection import ResidualConnection
from tests.conftest import to_numpy

EPSILON = 1e-6


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + EPSILON) * gamma + beta


def parts(seed: int = 0):
    """A built norm with random gamma/beta, a dropout and a Dense sub-layer, with their
    float64 weights."""
    rng = np.random.default_rng(seed)
    norm = keras.layers.LayerNormalization(epsilon=EPSILON)
    norm.build((2, 5, 8))
    gamma, beta = rng.normal(size=8), rng.normal(size=8)
    norm.set_weights([gamma.astype("float32"), beta.astype("float32")])
    dense = keras.layers.Dense(8)
    dense.build((2, 5, 8))
    kernel, bias = rng.normal(size=(8, 8)), rng.normal(size=8)
    dense.set_weights([kernel.astype("float32"), bias.astype("float32")])
    x = rng.normal(size=(2, 5, 8))
    return norm, keras.layers.Dropout(0.5), dense, (gamma, beta, kernel, bias), x


@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_the_reference(norm_first: bool):
    norm, dropout, dense, (gamma, beta, kernel, bias), x = parts()
    connection = ResidualConnection(norm, dropout, norm_first)
    got = to_numpy(connection(x.astype("float32"), dense, training=False))
    if norm_first:  # x + Sublayer(LayerNorm(x))
        want = x + layer_norm(x, gamma, beta) @ kernel + bias
    else:  # LayerNorm(x + Sublayer(x)), the paper
        want = layer_norm(x + x @ kernel + bias, gamma, beta)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_dropout_acts_on_the_sublayer_output_only_in_training():
    norm, dropout, _, _, x = parts()
    connection = ResidualConnection(norm, dropout, norm_first=True)
    x = x.astype("float32")
    ones = lambda normed: keras.ops.ones_like(normed)  # noqa: E731
    out = to_numpy(connection(x, ones, training=True))
    # Dropout(0.5) keeps each 1 as 2 or drops it to 0; the residual x is never dropped.
    assert set(np.round(out - x, 4).ravel()) <= {0.0, 2.0}
    assert {0.0, 2.0} <= set(np.round(out - x, 4).ravel())
    np.testing.assert_allclose(to_numpy(connection(x, ones, training=False)), x + 1, rtol=1e-6)


def test_extra_outputs_pass_through_in_order():
    norm, dropout, dense, _, x = parts()
    connection = ResidualConnection(norm, dropout, norm_first=False)
    x = x.astype("float32")
    out, cache, scores = connection(x, lambda normed: (dense(normed), "cache", None))
    np.testing.assert_allclose(to_numpy(out), to_numpy(connection(x, dense)), rtol=1e-6, atol=1e-6)
    assert (cache, scores) == ("cache", None)
