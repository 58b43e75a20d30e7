"""Sampling (`decoding.sampling`): draws follow the model's distribution as cut by
temperature, top-k and top-p (checked by counting against the NumPy distribution), and are
reproducible with a seed, whatever the batch, the order or the dropping of finished
sentences; the scores are the model's log-probabilities of the samples."""

import numpy as np
import pytest
from keras import ops

from keras_attention.core.special_tokens import EOS_ID
from keras_attention.decoding import beam_search, greedy_search
from keras_attention.decoding.forced import forced_scores
from keras_attention.decoding.sampling import filter_logits, sample_search
from tests.conftest import to_numpy
from tests.scripts.tiny_transformer import tiny_transformer
from tests.tolerances import assert_close

# The first token's distribution of `FixedDistribution`: 4 words, then EOS is forced.
WORD_PROBABILITIES = np.array([0.45, 0.3, 0.15, 0.1])
VOCABULARY = 4 + len(WORD_PROBABILITIES)  # PAD, UNK, BOS, EOS, the words


class FixedDistribution:
    """A model of the decoding protocol whose next token is always drawn from
    `WORD_PROBABILITIES` over tokens 4..7 (EOS, PAD, UNK and BOS never)."""

    output_vocabulary_size = VOCABULARY

    def start_decoding(self, source_ids, copies=1, max_length=None, use_cache=True):
        return ops.zeros((ops.shape(source_ids)[0] * copies, 1))

    def decode_step(self, state, tokens, index, copies=1):
        probabilities = np.concatenate([[0.0, 0.0, 0.0, 0.0], WORD_PROBABILITIES])
        with np.errstate(divide="ignore"):
            row = np.maximum(np.log(probabilities), -1e9).astype("float32")
        return ops.tile(ops.convert_to_tensor(row)[None, :], (ops.shape(tokens)[0], 1)), state

    def reorder_state(self, state, rows):
        return ops.take(state, rows, axis=0)

    def select_sentences(self, state, sentences, copies=1):
        rows = ops.reshape(sentences[:, None] * copies + ops.arange(copies)[None, :], (-1,))
        return ops.take(state, rows, axis=0)


def first_tokens(samples: int, **kwargs) -> np.ndarray:
    """The first token of `samples` samples of one sentence (max_length 2: a word, EOS)."""
    tokens, _ = sample_search(
        FixedDistribution(), np.array([[5, 3]]), num_samples=samples, max_length=2, **kwargs
    )
    tokens = to_numpy(tokens)[0]
    assert np.all(tokens[:, 1] == EOS_ID)
    return tokens[:, 0]


def expected(temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """The distribution that sampling with these settings should follow (float64)."""
    p = WORD_PROBABILITIES ** (1 / temperature)
    p = p / p.sum()
    order = np.argsort(-p)
    keep = np.zeros(len(p), bool)
    before = np.cumsum(p[order]) - p[order]
    keep[order[(before < top_p) | (np.arange(len(p)) == 0)]] = True
    if top_k:
        keep[order[top_k:]] = False
    p = np.where(keep, p, 0)
    return p / p.sum()


@pytest.mark.parametrize(
    "settings",
    [{}, {"temperature": 0.5}, {"temperature": 2.0}, {"top_k": 2}, {"top_p": 0.7}],
    ids=["plain", "temperature-0.5", "temperature-2", "top-k-2", "top-p-0.7"],
)
def test_samples_follow_the_distribution(settings):
    draws = 4000
    tokens = first_tokens(draws, seed=11, **settings)
    counts = np.bincount(tokens - 4, minlength=4)
    probabilities = expected(**settings)
    assert np.all(counts[probabilities == 0] == 0), counts
    spread = np.sqrt(draws * probabilities * (1 - probabilities))
    # Within 5 standard deviations of the expected count, each token.
    assert np.all(np.abs(counts - draws * probabilities) <= 5 * spread + 1e-9), (
        counts,
        draws * probabilities,
    )


def test_filter_logits_matches_a_numpy_reference():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 30)).astype("float32")
    for top_k, top_p in [(0, 1.0), (3, 1.0), (0, 0.5), (4, 0.3), (50, 0.999)]:
        kept = to_numpy(filter_logits(logits, top_k, top_p)) > -1e8
        for row, mask in zip(logits.astype("float64"), kept, strict=True):
            p = np.exp(row - row.max())
            p /= p.sum()
            order = np.argsort(-p)
            want = np.zeros(30, bool)
            before = np.cumsum(p[order]) - p[order]
            want[order[(before < top_p) | (np.arange(30) == 0)]] = True
            if top_k:
                want[order[top_k:]] = False
            np.testing.assert_array_equal(mask, want, err_msg=f"top_k={top_k} top_p={top_p}")


@pytest.fixture(scope="module")
def model():
    return tiny_transformer(20, seed=5, scale=0.6)


SOURCES = np.array([[5, 9, 3, 0, 0], [4, 8, 6, 7, 3], [10, 3, 0, 0, 0]], dtype="int32")


def test_a_seed_reproduces_its_samples_in_any_batch_and_another_seed_does_not(model):
    kwargs = dict(num_samples=3, max_length=7)
    tokens, _ = sample_search(model, SOURCES, seed=4, **kwargs)
    again, _ = sample_search(model, SOURCES, seed=4, drop_finished=False, **kwargs)
    np.testing.assert_array_equal(to_numpy(tokens), to_numpy(again))
    # The second sentence alone, told its key (its row in the batch), samples the same.
    alone, _ = sample_search(model, SOURCES[1:2], seed=4, sentence_keys=np.array([1]), **kwargs)
    np.testing.assert_array_equal(to_numpy(alone)[0], to_numpy(tokens)[1])
    other, _ = sample_search(model, SOURCES, seed=5, **kwargs)
    assert not np.array_equal(to_numpy(other), to_numpy(tokens))
    # The samples of one sentence differ from each other (a random model, 20 words).
    assert len({tuple(row) for row in to_numpy(tokens)[1]}) > 1


def test_samples_differ_from_the_beam_search_and_top_k_1_is_greedy(model):
    greedy, greedy_scores = greedy_search(model, SOURCES, max_length=7)
    beam, _ = beam_search(model, SOURCES, beam_size=3, max_length=7)
    sampled, _ = sample_search(model, SOURCES, num_samples=4, seed=0, max_length=7)
    sampled = to_numpy(sampled)
    assert any(not np.array_equal(sampled[:, k], to_numpy(beam)) for k in range(4))
    top_1, top_1_scores = sample_search(model, SOURCES, top_k=1, seed=3, max_length=7)
    np.testing.assert_array_equal(to_numpy(top_1), to_numpy(greedy))
    assert_close(top_1_scores, greedy_scores)


def test_a_sample_is_scored_by_the_model_as_forced_decoding_scores_it(model):
    tokens, scores = sample_search(model, SOURCES, num_samples=2, seed=9, temperature=1.5)
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    for k in range(2):
        forced = to_numpy(forced_scores(model, SOURCES, tokens[:, k])["log_prob"])
        assert_close(scores[:, k], forced)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"num_samples": 0}, "num_samples"),
        ({"temperature": 0.0}, "temperature must be above 0"),
        ({"top_k": -1}, "top_k must be 0"),
        ({"top_p": 0.0}, "top_p must be in"),
        ({"top_p": 1.5}, "top_p must be in"),
    ],
)
def test_settings_out_of_range_are_refused_by_name(model, settings, message):
    with pytest.raises(ValueError, match=message):
        sample_search(model, SOURCES, **settings)
