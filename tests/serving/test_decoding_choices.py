"""The `Translator`'s decoding choices beyond its one beam answer: the n-best list,
sampling, forced-decoding scores, ensembles and word alignments, on the tiny random model of
`tests/serving/conftest.py` (sentences in, strings out, in chunks as in a request)."""

import re

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.decoding import Ensemble, forced_scores
from keras_attention.serving.translator import Translator
from tests.conftest import to_numpy
from tests.serving.conftest import ALPHA, BEAM_SIZE, make_translator, translation_texts
from tests.tolerances import assert_close

SENTENCES = ["the dog sleeps in the park", "", "a cat runs", "the big dog runs in the park"]


def chunked(model, tokenizer, chunk_size) -> Translator:
    return make_translator(model, tokenizer, BEAM_SIZE, chunk_size=chunk_size)


def test_the_n_best_list_starts_with_the_translation_and_is_sorted(translator):
    best = translator.translate(SENTENCES)
    result = translator.n_best(SENTENCES)
    translations, scores = to_numpy(result["translations"]), to_numpy(result["scores"])
    assert translations.shape == (len(SENTENCES), BEAM_SIZE) == scores.shape
    assert translation_texts(translations[:, 0]) == translation_texts(best["translations"])
    assert_close(scores[:, 0], best["scores"])
    assert np.all(np.diff(scores, axis=1) <= 0)
    assert translation_texts(translations[1]) == ["", ""] and np.all(scores[1] == 0)
    one = translator.n_best(SENTENCES, num_hypotheses=1)
    assert to_numpy(one["translations"]).shape == (len(SENTENCES), 1)
    with pytest.raises(ValueError, match="num_hypotheses must be at most the beam size 2"):
        translator.n_best(SENTENCES, num_hypotheses=3)


def test_sampling_is_reproducible_in_any_chunking_and_differs_from_the_beam(model, tokenizer):
    whole = chunked(model, tokenizer, None)
    small = chunked(model, tokenizer, 1)
    first = whole.sample(SENTENCES, num_samples=3, seed=5)
    again = small.sample(SENTENCES, num_samples=3, seed=5)
    assert to_numpy(first["translations"]).shape == (len(SENTENCES), 3)
    assert translation_texts(first["translations"]) == translation_texts(again["translations"])
    assert_close(first["scores"], again["scores"])
    other = whole.sample(SENTENCES, num_samples=3, seed=6)
    assert translation_texts(other["translations"]) != translation_texts(first["translations"])
    one = whole.sample(SENTENCES, seed=5)  # one sample, no samples' axis
    assert translation_texts(one["translations"]) == translation_texts(
        to_numpy(first["translations"])[:, 0]
    )
    beam = translation_texts(whole.translate(SENTENCES)["translations"])
    samples = to_numpy(first["translations"])
    assert any(translation_texts(samples[:, k]) != beam for k in range(3))
    assert translation_texts(samples[1]) == ["", "", ""]


def test_sampling_settings_out_of_range_are_refused_by_name(translator):
    with pytest.raises(ValueError, match="temperature must be above 0"):
        translator.sample(SENTENCES, temperature=0.0)
    with pytest.raises(ValueError, match="top_p must be in"):
        translator.sample(SENTENCES, top_p=1.5)
    graph = tf.function(translator.sample_graph, autograph=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="temperature must be above 0"):
        graph(tf.constant(SENTENCES), tf.constant(1, tf.int64), 0.0, 0, 1.0)


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_scores_are_forced_decoding_of_the_tokenized_pairs_in_any_chunking(
    model, tokenizer, chunk_size
):
    # The searches' scores of their own token ids equal forced decoding's (tests/decoding);
    # here, that the translator tokenizes each pair, ends it with EOS and keeps its order.
    translator = chunked(model, tokenizer, chunk_size)
    targets = ["der Hund", "ein", "eine Katze läuft", "der große Hund läuft im Park"]
    scored = translator.score(SENTENCES, targets)
    source_ids = translator.encode(tf.constant(SENTENCES))[0]
    target_ids = translator.encode(tf.constant(targets), cut=False)[0]
    direct = forced_scores(model, source_ids, target_ids, ALPHA)
    assert_close(scored["scores"], direct["score"])
    assert_close(scored["log_probs"], direct["log_prob"])
    assert_close(scored["per_token"], direct["per_token"])
    np.testing.assert_array_equal(to_numpy(scored["lengths"]), to_numpy(direct["length"]))
    assert to_numpy(scored["lengths"]).tolist() == [
        len(tokenizer.tokenize(tf.constant([text]))[0]) + 1 for text in targets
    ]
    with pytest.raises(ValueError, match="one target per sentence; got 4 sentences and 1"):
        translator.score(SENTENCES, ["x"])


def test_an_ensemble_of_a_model_with_itself_translates_as_the_model(model, tokenizer, translator):
    pair = make_translator(Ensemble([model, model]), tokenizer, BEAM_SIZE)
    alone, paired = translator.translate(SENTENCES), pair.translate(SENTENCES)
    assert translation_texts(paired["translations"]) == translation_texts(alone["translations"])
    assert_close(paired["scores"], alone["scores"])


def test_alignments_link_words_within_both_sentences(translator):
    sources = ["the dog sleeps in the park", "", "a cat runs"]
    targets = ["der Hund schläft im Park", "etwas", "eine Katze läuft schnell"]
    alignments = translator.align(sources, targets)
    assert alignments[1] == ""
    for source, target, alignment in zip(sources, targets, alignments, strict=True):
        if not source:
            continue
        pairs = [tuple(map(int, pair.split("-"))) for pair in alignment.split()]
        assert re.fullmatch(r"(\d+-\d+)( \d+-\d+)*", alignment)
        assert pairs == sorted(set(pairs))
        assert all(0 <= i < len(source.split()) and 0 <= j < len(target.split()) for i, j in pairs)
        # Every target word is aligned (each of its subwords attends somewhere).
        assert {j for _, j in pairs} == set(range(len(target.split())))
    with pytest.raises(ValueError, match="one translation per sentence"):
        translator.align(sources, targets[:2])
