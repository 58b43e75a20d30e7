"""The layers inside Functional, Sequential and subclassed Keras models, with Keras masks."""

import keras
import numpy as np
import pytest

import keras_attention as ka
from tests.conftest import to_numpy
from tests.layers import layer_cases as cases
from tests.layers.layer_cases import CASE_IDS, LAYER_CASES, LayerCase
from tests.tolerances import assert_close

NUM_HEADS, INTERMEDIATE_DIM, NUM_CLASSES = 2, 24, 3
SHORT_TARGET, SHORT_SOURCE, EXTRA_PADDING = 3, 4, 2


def embed(ids, seed: int):
    """Embeds `ids` with a `keras.layers.Embedding(mask_zero=True)`: the output carries
    the Keras mask `ids != 0`."""
    initializer = keras.initializers.RandomNormal(stddev=1.0, seed=seed)
    return keras.layers.Embedding(
        cases.VOCABULARY_SIZE, cases.D_MODEL, mask_zero=True, embeddings_initializer=initializer
    )(ids)


def attention_on_masked(layer: keras.layers.Layer, target_ids, source_ids):
    source = embed(source_ids, seed=2)
    return layer(embed(target_ids, seed=1), source, source)


def cross_attention_on_masked(layer: keras.layers.Layer, target_ids, source_ids):
    return layer(embed(target_ids, seed=1), embed(source_ids, seed=2))


def self_attention_on_masked(layer: keras.layers.Layer, target_ids, source_ids):
    del source_ids  # a single sequence
    return layer(embed(target_ids, seed=1))


def embedding_on_ids(layer: keras.layers.Layer, target_ids, source_ids):
    del source_ids
    return layer(layer(target_ids), reverse=True)


# How each layer is called on Keras-masked inputs only (no explicit mask argument).
MASKED_CALLS = {
    "ScaledDotProductAttention": attention_on_masked,
    "MultiHeadAttention": cross_attention_on_masked,
    "SinusoidalPositionalEncoding": self_attention_on_masked,
    "LearnedPositionalEncoding": self_attention_on_masked,
    "PositionalEmbedding": embedding_on_ids,
    "PositionwiseFeedForward": self_attention_on_masked,
    "TransformerEncoderBlock": self_attention_on_masked,
    "TransformerDecoderBlock": cross_attention_on_masked,
    "TransformerEncoder": self_attention_on_masked,
    "TransformerDecoder": cross_attention_on_masked,
}


def masked_layer(case: LayerCase) -> keras.layers.Layer:
    """The case's layer, with `mask_zero=True` where the layer makes the mask itself."""
    overrides = {"mask_zero": True} if case.layer_class is ka.PositionalEmbedding else {}
    return case.make_layer(**overrides)


def random_ids(rng: np.random.Generator, batch: int, length: int, padding: int = 0) -> np.ndarray:
    """`(batch, length)` int32 ids, none of them 0, except `padding` zeros ending each row."""
    ids = rng.integers(1, cases.VOCABULARY_SIZE, size=(batch, length)).astype("int32")
    if padding:
        ids[:, length - padding :] = 0
    return ids


def pad(ids: np.ndarray, padding: int) -> np.ndarray:
    return np.pad(ids, ((0, 0), (0, padding)))


def fit_two_steps(model: keras.Model, x, y) -> float:
    """Trains `model` for 2 steps (4 examples, batch 2) and checks the weights moved.

    Returns:
        The training loss.
    """
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = model.get_weights()
    history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    assert int(to_numpy(model.optimizer.iterations)) == 2
    after = model.get_weights()
    assert any(not np.allclose(b, a) for b, a in zip(before, after, strict=True))
    loss = history.history["loss"][-1]
    assert np.isfinite(loss)
    return loss


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_functional_model_gives_the_outputs_of_the_layer(case: LayerCase):
    layer, inputs, direct = cases.call_case(case)
    model = cases.functional_model(case, layer)
    outputs = cases.output_list(model(inputs))
    assert len(outputs) == len(direct)
    for have, want in zip(outputs, direct, strict=True):
        assert_close(have, want)


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_keras_mask_propagates_through_the_layer(case: LayerCase):
    rng = np.random.default_rng(0)
    target_ids = random_ids(rng, 2, SHORT_TARGET + EXTRA_PADDING, padding=EXTRA_PADDING)
    source_ids = random_ids(rng, 2, SHORT_SOURCE + EXTRA_PADDING, padding=EXTRA_PADDING)
    output = MASKED_CALLS[case.name](masked_layer(case), target_ids, source_ids)
    mask = ka.masks.keras_mask(output)
    assert mask is not None, f"{case.name} dropped the Keras mask"
    np.testing.assert_array_equal(to_numpy(mask), target_ids != 0)


# Layers called with an explicit `(batch, query_len, key_len)` attention mask as well.
EXPLICIT_MASK_CALLS = {
    "ScaledDotProductAttention": lambda x, mask: ka.ScaledDotProductAttention()(x, x, x, mask=mask),
    "MultiHeadAttention": lambda x, mask: ka.MultiHeadAttention(NUM_HEADS)(
        x, x, attention_mask=mask
    ),
    "TransformerEncoderBlock": lambda x, mask: ka.TransformerEncoderBlock(
        num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM
    )(x, attention_mask=mask),
}


@pytest.mark.parametrize("name", list(EXPLICIT_MASK_CALLS))
def test_explicit_attention_mask_does_not_replace_the_keras_mask(name: str):
    target_ids = random_ids(np.random.default_rng(6), 2, 5, padding=EXTRA_PADDING)
    attention_mask = np.tril(np.ones((2, 5, 5), dtype=bool))
    output = EXPLICIT_MASK_CALLS[name](embed(target_ids, seed=1), attention_mask)
    mask = ka.masks.keras_mask(output)
    assert mask is not None, f"{name} dropped the Keras mask"
    assert tuple(mask.shape) == target_ids.shape
    np.testing.assert_array_equal(to_numpy(mask), target_ids != 0)


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_padding_does_not_change_the_real_outputs_of_a_functional_model(case: LayerCase):
    target = keras.Input(shape=(None,), dtype="int32", name="target_ids")
    source = keras.Input(shape=(None,), dtype="int32", name="source_ids")
    output = MASKED_CALLS[case.name](masked_layer(case), target, source)
    model = keras.Model({"target_ids": target, "source_ids": source}, output)
    rng = np.random.default_rng(1)
    short = {
        "target_ids": random_ids(rng, 2, SHORT_TARGET),
        "source_ids": random_ids(rng, 2, SHORT_SOURCE),
    }
    padded = {name: pad(ids, EXTRA_PADDING) for name, ids in short.items()}
    expected = to_numpy(model(short))
    actual = to_numpy(model(padded))
    assert actual.shape[1] == SHORT_TARGET + EXTRA_PADDING
    assert_close(actual[:, :SHORT_TARGET], expected)


def test_global_average_pooling_averages_real_positions_only():
    ids = keras.Input(shape=(None,), dtype="int32")
    hidden = ka.TransformerEncoderBlock(num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM)(
        embed(ids, seed=3)
    )
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    model = keras.Model(ids, [hidden, pooled])
    token_ids = random_ids(np.random.default_rng(2), 2, 6)
    token_ids[1, 3:] = 0
    hidden_values, pooled_values = (to_numpy(y) for y in model(token_ids))
    real = (token_ids != 0)[..., None]  # (B, T, 1)
    expected = (hidden_values * real).sum(axis=1) / real.sum(axis=1)
    assert_close(pooled_values, expected)
    # The padded positions do carry values, so ignoring the mask would be seen.
    assert not np.allclose(pooled_values[1], hidden_values[1].mean(axis=0), atol=1e-3)


def test_sequential_classifier_trains_with_masks():
    model = keras.Sequential(
        [
            keras.Input(shape=(6,), dtype="int32"),
            keras.layers.Embedding(cases.VOCABULARY_SIZE, cases.D_MODEL, mask_zero=True),
            ka.TransformerEncoderBlock(num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(NUM_CLASSES),
        ]
    )
    rng = np.random.default_rng(3)
    x = random_ids(rng, 4, 6, padding=2)
    y = rng.integers(0, NUM_CLASSES, size=(4,))
    fit_two_steps(model, x, y)
    assert model.predict(x, verbose=0).shape == (4, NUM_CLASSES)


def test_subclassed_encoder_decoder_trains():
    rng = np.random.default_rng(4)
    x = {"source_ids": random_ids(rng, 4, 6, padding=2), "target_ids": random_ids(rng, 4, 5)}
    y = random_ids(rng, 4, 5)
    model = cases.Seq2Seq()
    model(x)
    fit_two_steps(model, x, y)
    assert model.predict(x, verbose=0).shape == (4, 5, cases.VOCABULARY_SIZE)


def test_decoder_only_language_model_trains_and_is_causal():
    ids = keras.Input(shape=(None,), dtype="int32")
    embedding = ka.PositionalEmbedding(cases.VOCABULARY_SIZE, cases.D_MODEL)
    decoder = ka.TransformerDecoder(
        num_layers=2, num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM
    )
    logits = embedding(decoder(embedding(ids)), reverse=True)  # tied weights
    model = keras.Model(ids, logits)
    assert all(not block.has_cross_attention for block in decoder.blocks)
    tokens = random_ids(np.random.default_rng(5), 4, 7, padding=1)
    fit_two_steps(model, tokens[:, :-1], tokens[:, 1:])
    # A position's logits do not depend on later tokens.
    changed = tokens[:, :-1].copy()
    changed[:, -1] = (changed[:, -1] % (cases.VOCABULARY_SIZE - 1)) + 1
    original, edited = to_numpy(model(tokens[:, :-1])), to_numpy(model(changed))
    assert_close(edited[:, :-1], original[:, :-1])
    assert not np.allclose(edited[:, -1], original[:, -1])
