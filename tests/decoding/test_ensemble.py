"""`decoding.Ensemble`: several models decoded as one. A model with itself is the model
(searches and forced scores); two models' steps are the normalised weighted average of
their log-probabilities (a float64 NumPy reference); mismatched members are refused."""

import numpy as np
import pytest

from keras_attention.decoding import beam_search, greedy_search
from keras_attention.decoding.ensemble import Ensemble
from keras_attention.decoding.forced import forced_scores
from keras_attention.decoding.sampling import sample_search
from tests.conftest import to_numpy
from tests.scripts.tiny_transformer import tiny_transformer
from tests.tolerances import assert_close

SOURCES = np.array([[5, 9, 3, 0, 0], [4, 8, 6, 7, 3], [10, 3, 0, 0, 0]], dtype="int32")


@pytest.fixture(scope="module")
def models():
    return (tiny_transformer(24, seed=0, scale=0.6), tiny_transformer(24, seed=1, scale=0.6))


def test_an_ensemble_of_a_model_with_itself_is_the_model(models):
    model = models[0]
    pair = Ensemble([model, model])
    for search in (
        lambda m: beam_search(m, SOURCES, beam_size=3, alpha=0.6, max_length=6, num_hypotheses=3),
        lambda m: greedy_search(m, SOURCES, max_length=6),
        lambda m: sample_search(m, SOURCES, num_samples=2, seed=1, max_length=6),
    ):
        (alone, alone_scores), (paired, paired_scores) = search(model), search(pair)
        np.testing.assert_array_equal(to_numpy(paired), to_numpy(alone))
        assert_close(paired_scores, alone_scores)
    targets = to_numpy(greedy_search(model, SOURCES, max_length=6)[0])
    assert_close(
        forced_scores(pair, SOURCES, targets)["log_prob"],
        forced_scores(model, SOURCES, targets)["log_prob"],
    )


def test_two_models_steps_average_their_log_probabilities(models):
    first, second = models
    ensemble = Ensemble([first, second], weights=[3, 1])
    target_in = np.array([[2, 7, 8], [2, 9, 9], [2, 4, 5]], dtype="int32")
    got = to_numpy(ensemble.sequence_log_probs(SOURCES, target_in))
    members = [
        to_numpy(model.sequence_log_probs(SOURCES, target_in)).astype(np.float64)
        for model in models
    ]
    mixed = 0.75 * members[0] + 0.25 * members[1]
    want = mixed - np.log(np.exp(mixed).sum(-1, keepdims=True))
    assert_close(got, want)
    # The incremental steps of a search give the same numbers as the forced pass.
    state = ensemble.start_decoding(SOURCES, 1, 3)
    for index in range(3):
        step, state = ensemble.decode_step(state, target_in, index)
        assert_close(step, want[:, index])
    assert ensemble.cross_attention_weights(SOURCES, target_in).shape == (3, 3, 5)


def test_members_that_cannot_be_averaged_are_refused(models):
    with pytest.raises(ValueError, match="two or more models"):
        Ensemble([models[0]])
    with pytest.raises(ValueError, match="share their target vocabulary"):
        Ensemble([models[0], tiny_transformer(30)])
    with pytest.raises(ValueError, match="one positive number per model"):
        Ensemble(models, weights=[1.0])
