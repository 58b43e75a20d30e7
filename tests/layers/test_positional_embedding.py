"""PositionalEmbedding (Sections 3.4 and 3.5) against a float64 NumPy reference."""

import math

import keras
import numpy as np
import pytest

from keras_attention.layers import PositionalEmbedding
from keras_attention.masks import keras_mask
from tests.conftest import to_numpy
from tests.layers.test_sinusoidal_positional_encoding import reference_encoding
from tests.tolerances import assert_close

VOCABULARY_SIZE = 17
TOKEN_IDS = np.array([[5, 16, 3, 9, 0, 0], [1, 2, 0, 0, 0, 0], [7, 7, 4, 12, 11, 8]])


def reference_embedding(
    layer: PositionalEmbedding, token_ids: np.ndarray, start_index: int = 0
) -> np.ndarray:
    """`E[ids] * sqrt(d_model) + PE` in float64, from the layer's own embedding matrix (not
    scaled when the layer says `scale_embeddings=False`; `PE` its learned rows when it has
    `max_positions`)."""
    table = to_numpy(layer.embeddings).astype(np.float64)
    hidden = table[token_ids]
    if layer.scale_embeddings:
        hidden = hidden * math.sqrt(layer.d_model)
    length = token_ids.shape[1]
    if layer.max_positions is None:
        return hidden + reference_encoding(length, layer.d_model, start_index)[None]
    learned = to_numpy(layer.position_encoding.embeddings).astype(np.float64)
    rows = np.minimum(np.arange(start_index, start_index + length), layer.max_positions - 1)
    return hidden + learned[rows][None]


def random_hidden(d_model: int) -> np.ndarray:
    """Hidden states `(2, 4, d_model)` to project back to the vocabulary."""
    return np.random.default_rng(1).normal(size=(2, 4, d_model)).astype("float32")


def reverse_matrix(layer: PositionalEmbedding) -> np.ndarray:
    """The untied `(d_model, vocabulary_size)` output matrix in float64."""
    return to_numpy(layer.token_embedding.reverse_embeddings).astype(np.float64)


@pytest.mark.parametrize("scale_embeddings", [True, False])
@pytest.mark.parametrize("d_model", [8, 7])
def test_matches_scaled_embedding_plus_encoding(d_model, scale_embeddings):
    layer = PositionalEmbedding(VOCABULARY_SIZE, d_model, scale_embeddings=scale_embeddings)
    output = to_numpy(layer(TOKEN_IDS))
    assert output.shape == (*TOKEN_IDS.shape, d_model)
    expected = reference_embedding(layer, TOKEN_IDS)
    assert_close(output, expected)
    if not scale_embeddings:  # the reference's own switch: the unscaled sum really differs
        scaled = PositionalEmbedding(VOCABULARY_SIZE, d_model)
        scaled.build(TOKEN_IDS.shape)
        scaled.set_weights(layer.get_weights())
        assert not np.allclose(to_numpy(scaled(TOKEN_IDS)), output, atol=1e-3)


@pytest.mark.parametrize("start_index", [0, 3, 9])
def test_learned_positions_add_their_rows(start_index: int):
    layer = PositionalEmbedding(VOCABULARY_SIZE, 8, max_positions=12)
    output = to_numpy(layer(TOKEN_IDS, start_index=start_index))
    assert [w.shape for w in layer.position_encoding.weights] == [(12, 8)]
    # Positions 9 to 14 of a 12-row table: the last three reuse row 11.
    assert_close(output, reference_embedding(layer, TOKEN_IDS, start_index))
    assert layer.get_config()["max_positions"] == 12
    restored = PositionalEmbedding.from_config(layer.get_config())
    restored.build(TOKEN_IDS.shape)
    restored.set_weights(layer.get_weights())
    np.testing.assert_array_equal(to_numpy(restored(TOKEN_IDS, start_index=start_index)), output)


@pytest.mark.parametrize("as_tensor", [False, True], ids=["int", "tensor"])
@pytest.mark.parametrize("start_index", [2, 9])
def test_start_index_shifts_positions(start_index, as_tensor):
    layer = PositionalEmbedding(VOCABULARY_SIZE, 8)
    start = keras.ops.convert_to_tensor(start_index, "int32") if as_tensor else start_index
    output = to_numpy(layer(TOKEN_IDS, start_index=start))
    expected = reference_embedding(layer, TOKEN_IDS, start_index=start_index)
    assert_close(output, expected)
    last_column = to_numpy(layer(TOKEN_IDS[:, -1:], start_index=TOKEN_IDS.shape[1] - 1))
    assert_close(last_column, to_numpy(layer(TOKEN_IDS))[:, -1:])


@pytest.mark.parametrize("mask_zero", [True, False])
def test_keras_mask_marks_non_zero_ids(mask_zero):
    layer = PositionalEmbedding(VOCABULARY_SIZE, 8, mask_zero=mask_zero)
    output = layer(TOKEN_IDS)
    mask = keras_mask(output)
    if mask_zero:
        np.testing.assert_array_equal(to_numpy(mask), TOKEN_IDS != 0)
        np.testing.assert_array_equal(to_numpy(layer.compute_mask(TOKEN_IDS)), TOKEN_IDS != 0)
    else:
        assert mask is None
        assert layer.compute_mask(TOKEN_IDS) is None


def test_reverse_with_tied_weights_projects_with_transposed_embeddings():
    d_model = 8
    layer = PositionalEmbedding(VOCABULARY_SIZE, d_model, tie_weights=True)
    layer(TOKEN_IDS)
    hidden = random_hidden(d_model)
    logits = to_numpy(layer(hidden, reverse=True))
    assert logits.shape == (2, 4, VOCABULARY_SIZE)
    table = to_numpy(layer.embeddings).astype(np.float64)
    assert_close(logits, hidden.astype(np.float64) @ table.T)
    assert len(layer.weights) == 1


def test_reverse_with_untied_weights_uses_a_separate_matrix():
    d_model = 8
    layer = PositionalEmbedding(VOCABULARY_SIZE, d_model, tie_weights=False)
    layer(TOKEN_IDS)
    hidden = random_hidden(d_model).astype(np.float64)
    logits = to_numpy(layer(hidden.astype("float32"), reverse=True))
    assert reverse_matrix(layer).shape == (d_model, VOCABULARY_SIZE)
    assert_close(logits, hidden @ reverse_matrix(layer))
    tied_logits = hidden @ to_numpy(layer.embeddings).astype(np.float64).T
    assert not np.allclose(logits, tied_logits, atol=1e-3)
    assert len(layer.weights) == 2


@pytest.mark.parametrize("training", [False, None])
def test_no_dropout_at_inference(training):
    layer = PositionalEmbedding(VOCABULARY_SIZE, 8, dropout=0.5)
    output = to_numpy(layer(TOKEN_IDS, training=training))
    assert_close(output, reference_embedding(layer, TOKEN_IDS))


def test_dropout_in_training_zeroes_and_rescales_the_sum():
    rate = 0.5
    layer = PositionalEmbedding(VOCABULARY_SIZE, 8, dropout=rate)
    output = to_numpy(layer(TOKEN_IDS, training=True))
    expected = reference_embedding(layer, TOKEN_IDS)
    dropped = output == 0
    assert 0 < dropped.mean() < 1
    assert_close(output[~dropped], expected[~dropped] / (1 - rate))


@pytest.mark.parametrize("d_model", [8, 32])
def test_default_initializer_has_stddev_inverse_sqrt_d_model(d_model):
    layer = PositionalEmbedding(2048, d_model)
    layer.build((1, 1))
    table = to_numpy(layer.embeddings).astype(np.float64)
    assert abs(table.mean()) < 0.05 * d_model**-0.5
    np.testing.assert_allclose(table.std(), d_model**-0.5, rtol=0.05)
    np.testing.assert_allclose((table * math.sqrt(d_model)).std(), 1.0, rtol=0.05)


def test_symbolic_model_matches_eager_call():
    layer = PositionalEmbedding(VOCABULARY_SIZE, 8)
    token_ids = keras.Input(shape=(None,), dtype="int32")
    hidden = layer(token_ids)
    logits = layer(hidden, reverse=True)
    assert tuple(hidden.shape) == (None, None, 8)
    assert tuple(logits.shape) == (None, None, VOCABULARY_SIZE)
    model = keras.Model(token_ids, [hidden, logits])
    model_hidden, model_logits = (to_numpy(x) for x in model(TOKEN_IDS))
    expected = reference_embedding(layer, TOKEN_IDS)
    assert_close(model_hidden, expected)
    table = to_numpy(layer.embeddings).astype(np.float64)
    assert_close(model_logits, expected @ table.T)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"vocabulary_size": 0}, "vocabulary_size"),
        ({"vocabulary_size": -5}, "vocabulary_size"),
        ({"vocabulary_size": 10.5}, "vocabulary_size"),
        ({"d_model": 0}, "d_model"),
        ({"d_model": -8}, "d_model"),
        ({"d_model": "8"}, "d_model"),
        ({"dropout": -0.1}, "dropout"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": 1.5}, "dropout"),
        ({"max_positions": 0}, "max_positions"),
    ],
)
def test_invalid_arguments_raise_value_error_naming_them(kwargs, name):
    arguments = {"vocabulary_size": VOCABULARY_SIZE, "d_model": 8, **kwargs}
    with pytest.raises(ValueError, match=name):
        PositionalEmbedding(**arguments)
