"""Forced decoding (`decoding.forced`): the log-probability of given translations by one
forward pass, against a float64 NumPy reference of the model's logits, and equal to the
searches' own scores of their outputs (beam search's whole n-best list, greedy search)."""

import numpy as np
import pytest

from keras_attention.core.special_tokens import BOS_ID, PAD_ID
from keras_attention.decoding import beam_search, greedy_search, length_penalty
from keras_attention.decoding.forced import forced_scores
from tests.conftest import to_numpy
from tests.scripts.tiny_transformer import tiny_transformer
from tests.tolerances import assert_close

SOURCES = np.array([[5, 9, 3, 0, 0], [4, 8, 6, 7, 3], [10, 3, 0, 0, 0]], dtype="int32")
TARGETS = np.array([[7, 3, 0, 0], [11, 12, 13, 3], [3, 0, 0, 0]], dtype="int32")


@pytest.fixture(scope="module")
def model():
    return tiny_transformer(24, num_decoder_layers=2, seed=2, scale=0.6)


def test_forced_scores_match_a_numpy_reference_of_the_logits(model):
    target_in = np.concatenate([np.full((3, 1), BOS_ID), TARGETS[:, :-1]], axis=1)
    logits = to_numpy(model((SOURCES, target_in))).astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, TARGETS[:, :, None], axis=2)[:, :, 0]
    picked = np.where(TARGETS != PAD_ID, picked, 0.0)
    lengths = (TARGETS != PAD_ID).sum(1)
    result = forced_scores(model, SOURCES, TARGETS, alpha=0.6)
    assert_close(result["tokens"], picked)
    assert_close(result["log_prob"], picked.sum(1))
    assert_close(result["per_token"], picked.sum(1) / lengths)
    assert_close(result["score"], picked.sum(1) / ((5 + lengths) / 6) ** 0.6)
    np.testing.assert_array_equal(to_numpy(result["length"]), lengths)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_the_beam_searchs_n_best_scores_are_its_outputs_forced_scores(model, alpha):
    tokens, scores = beam_search(
        model, SOURCES, beam_size=4, alpha=alpha, max_length=6, num_hypotheses=4
    )
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    for k in range(4):
        forced = forced_scores(model, SOURCES, tokens[:, k], alpha=alpha)
        assert_close(forced["score"], scores[:, k], err_msg=f"hypothesis {k}")
        lengths = to_numpy(forced["length"])
        penalty = to_numpy(length_penalty(lengths, alpha))
        assert_close(forced["log_prob"], scores[:, k] * penalty)


def test_greedy_searchs_scores_are_its_outputs_forced_log_probabilities(model):
    tokens, scores = greedy_search(model, SOURCES, max_length=6)
    assert_close(forced_scores(model, SOURCES, tokens)["log_prob"], scores)
