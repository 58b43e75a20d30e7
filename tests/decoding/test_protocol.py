"""The decoding protocol (`keras_attention.decoding.protocol`): the searches call only its
four methods, and a second model that implements it, a decoder-only language model built from
the library's layers (as in notebook 03), decodes with the same `greedy_search` and
`beam_search`.

`LanguageModel` lives here, as a demonstration of the protocol: a model that is not a
`Transformer`, with no encoder and a state that is nothing but its self-attention caches. It
generates from BOS; the searches' `source_ids` only give it the number of sequences and their
length limits (source length + `extra_length`, capped by `max_length`).
"""

import itertools

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import masks
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.decoding import DecodingModel, beam_search, greedy_search
from keras_attention.layers import PositionalEmbedding, TransformerDecoder
from keras_attention.models import Transformer
from tests.conftest import to_numpy
from tests.layers.numpy_reference import randomize_weights
from tests.tolerances import assert_clear_winner, assert_close

VOCABULARY_SIZE = 6  # PAD, UNK, BOS, EOS and two words: UNK, 4 and 5 may be generated
WORDS = [token for token in range(VOCABULARY_SIZE) if token not in (PAD_ID, BOS_ID, EOS_ID)]
# Four "sources" of 3 or more tokens: with max_length=3 every sequence's limit is 3.
SOURCES = np.array([[4, 5, 3, 0], [5, 4, 4, 3], [4, 4, 3, 0], [5, 5, 5, 3]], dtype="int32")
MAX_LENGTH = 3
# Three random models under TensorFlow; one on the other backends, which run the same
# `keras.ops` searches (under JAX each model compiles its loops afresh).
SEEDS = (0, 1, 2) if keras.backend.backend() == "tensorflow" else (0,)


class LanguageModel(keras.Model):
    """A decoder-only language model: a shared embedding (tied to the output projection),
    positions, and a `TransformerDecoder` without cross-attention; `call(tokens)` gives the
    next-token logits `(batch, T, vocabulary)`. It implements the decoding protocol."""

    def __init__(self, vocabulary_size: int, d_model: int = 16, **kwargs):
        super().__init__(**kwargs)
        self.embedding = PositionalEmbedding(vocabulary_size, d_model, name="embedding")
        self.decoder = TransformerDecoder(
            num_layers=2, num_heads=2, intermediate_dim=32, dropout=0.0, name="decoder"
        )

    def call(self, tokens, training=None):
        hidden = self.embedding(tokens, training=training)  # (B, T, D)
        hidden = self.decoder(
            hidden, decoder_padding_mask=masks.padding_mask(tokens), training=training
        )
        return self.embedding(hidden, reverse=True)  # (B, T, V)

    def start_decoding(self, source_ids, copies: int = 1, max_length=None, use_cache=True):
        if not use_cache:
            return []
        rows = ops.shape(source_ids)[0] * copies
        grow = keras.backend.backend() != "jax"  # JAX's loops need fixed buffers
        return self.decoder.initial_cache(rows, max_length * 0 if grow else max_length)

    def decode_step(self, caches, tokens, index, copies: int = 1):
        rows = ops.shape(tokens)[0]
        if not caches:  # the whole prefix again (the whole buffer under JAX: static shapes)
            prefix = tokens if keras.backend.backend() == "jax" else tokens[:, : index + 1]
            logits = ops.take(self(prefix), index, axis=1)  # (N, V)
            return ops.log_softmax(ops.cast(logits, "float32"), axis=-1), caches
        last = ops.slice(tokens, [0, index], [rows, 1])  # (N, 1)
        hidden, caches = self.decoder(
            self.embedding(last, start_index=index),
            decoder_padding_mask=masks.padding_mask(last),
            self_attention_cache=caches,
            self_attention_cache_update_index=index,
            append_to_cache=keras.backend.backend() != "jax",
        )
        logits = self.embedding(hidden, reverse=True)[:, 0]  # (N, V)
        return ops.log_softmax(ops.cast(logits, "float32"), axis=-1), caches

    def reorder_state(self, caches, rows):
        return [ops.take(cache, rows, axis=1) for cache in caches]

    def select_sentences(self, caches, sentences, copies: int = 1):
        rows = ops.reshape(
            sentences[:, None] * copies + ops.arange(copies, dtype="int32")[None, :], (-1,)
        )
        return self.reorder_state(caches, rows)


class ProtocolOnly:
    """Only the protocol's four methods of `model`: no `decoder`, `encode`, `built`..."""

    def __init__(self, model):
        self.start_decoding = model.start_decoding
        self.decode_step = model.decode_step
        self.reorder_state = model.reorder_state
        self.select_sentences = model.select_sentences


def language_model(seed: int) -> LanguageModel:
    model = LanguageModel(VOCABULARY_SIZE)
    model(SOURCES)
    randomize_weights(model, seed, scale=0.6)
    return model


def full_log_probs(model: LanguageModel, prefix: list[int]) -> np.ndarray:
    """The float64 log-probabilities of the token after `prefix` (BOS first), from one
    forward pass over the whole prefix."""
    logits = to_numpy(model(np.array([prefix], dtype="int32")))[0, -1].astype(np.float64)
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def allowed(log_probs: np.ndarray, at_limit: bool) -> dict[int, float]:
    """The tokens a search may take, with their log-probabilities: words and EOS, only EOS at
    the length limit."""
    return {EOS_ID: log_probs[EOS_ID]} if at_limit else {t: log_probs[t] for t in [*WORDS, EOS_ID]}


def penalty(length: int, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


def test_both_models_implement_the_protocol():
    assert isinstance(language_model(0), DecodingModel)
    assert isinstance(Transformer(vocabulary_size=8, d_model=8, num_heads=2), DecodingModel)
    assert not isinstance(keras.layers.Dense(2), DecodingModel)


@pytest.mark.parametrize("copies", [1, 3])
def test_a_step_gives_the_full_forward_pass_log_probabilities(copies: int):
    """Feeding a batch of sequences one token a step (`copies` rows per sequence) gives, at
    every position, the log-softmax of one forward pass over the whole sequence."""
    model = language_model(1)
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, VOCABULARY_SIZE, size=(4 * copies, 5)).astype("int32")
    tokens[:, 0] = BOS_ID
    logits = to_numpy(model(tokens)).astype(np.float64)
    expected = logits - logits.max(-1, keepdims=True)
    expected -= np.log(np.exp(expected).sum(-1, keepdims=True))
    state = model.start_decoding(SOURCES, copies, ops.convert_to_tensor(5))
    for index in range(tokens.shape[1]):
        log_probs, state = model.decode_step(state, ops.convert_to_tensor(tokens), index, copies)
        assert_close(log_probs, expected[:, index])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_search_of_the_language_model_is_stepwise_argmax(seed: int, use_cache: bool):
    """Greedy search against a step-by-step argmax over full forward passes (each step's
    best token clearly ahead: the two computations' rounding cannot flip it)."""
    model = language_model(seed)
    tokens, scores = greedy_search(model, SOURCES[:1], max_length=MAX_LENGTH, use_cache=use_cache)
    prefix, total = [BOS_ID], 0.0
    while prefix[-1] != EOS_ID:
        choices = allowed(full_log_probs(model, prefix), len(prefix) == MAX_LENGTH)
        best = max(choices, key=choices.get)
        if len(choices) > 1:
            assert_clear_winner(list(choices.values()), what=f"the choices after {prefix}")
        prefix.append(best)
        total += choices[best]
    np.testing.assert_array_equal(to_numpy(tokens)[0, : len(prefix) - 1], prefix[1:])
    assert_close(to_numpy(scores)[0], total)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_search_of_the_language_model_finds_the_best_sequence(seed: int, alpha: float):
    """With a beam as wide as every candidate (12 = 3 live hypotheses x 4 tokens), beam search
    is exhaustive: it finds the best length-penalised sequence of all 13 that end by the
    limit, worked out by brute force (clearly ahead of the second best: the two computations'
    rounding cannot swap them). Every sentence of a batch finds the same."""
    model = language_model(seed)
    best, best_score, all_scores = None, -np.inf, []
    for length in range(1, MAX_LENGTH + 1):
        for words in itertools.product(WORDS, repeat=length - 1):
            sequence, log_p = [*words, EOS_ID], 0.0
            for position, token in enumerate(sequence):
                choices = allowed(
                    full_log_probs(model, [BOS_ID, *sequence[:position]]),
                    position + 1 == MAX_LENGTH,
                )
                log_p += choices[token]
            all_scores.append(log_p / penalty(length, alpha))
            if log_p / penalty(length, alpha) > best_score:
                best, best_score = sequence, log_p / penalty(length, alpha)
    assert_clear_winner(all_scores, what="the sequences' scores")
    tokens, scores = beam_search(model, SOURCES, beam_size=12, alpha=alpha, max_length=MAX_LENGTH)
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    for row, score in zip(tokens, scores, strict=True):
        np.testing.assert_array_equal(row[: len(best)], best)
        assert np.all(row[len(best) :] == PAD_ID)
        assert_close(score, best_score)


@pytest.mark.parametrize("search", ["greedy", "beam"])
@pytest.mark.parametrize("kind", ["transformer", "language_model"])
def test_the_searches_need_nothing_but_the_protocol(kind: str, search: str):
    """The same tokens and scores through an object that has only the protocol's methods."""
    if kind == "transformer":
        model = Transformer(
            vocabulary_size=VOCABULARY_SIZE * 3, num_encoder_layers=1, num_decoder_layers=1,
            d_model=16, num_heads=2, intermediate_dim=32, dropout=0.0,
        )  # fmt: skip
        model((SOURCES, SOURCES))
        randomize_weights(model, 3, scale=0.6)
    else:
        model = language_model(3)
    run = greedy_search if search == "greedy" else beam_search
    options = {} if search == "greedy" else {"beam_size": 3}
    direct = run(model, SOURCES, extra_length=3, **options)
    wrapped = run(ProtocolOnly(model), SOURCES, extra_length=3, **options)
    np.testing.assert_array_equal(to_numpy(wrapped[0]), to_numpy(direct[0]))
    assert_close(wrapped[1], direct[1])
    assert to_numpy(direct[0]).shape == (len(SOURCES), (SOURCES != PAD_ID).sum(1).max() + 3)
