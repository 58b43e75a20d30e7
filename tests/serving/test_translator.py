"""`Translator`: raw sentences in, translations out; what it keeps of a request and what it
refuses (its export, and the same requests served, are in `test_export.py`). TensorFlow only."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.serving.translator import Translator
from tests.conftest import to_numpy
from tests.serving.conftest import (
    LONG,
    MAX_SOURCE,
    NOT_VECTORS,
    rank_error_pattern,
    translation_texts,
)

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the translator runs a TensorFlow graph"
)


def test_long_input_is_cut_to_the_maximum_source_length(translator: Translator, processor):
    source = to_numpy(translator.encode(tf.constant([LONG, "the dog"]))[0])
    assert source.shape == (2, MAX_SOURCE)
    np.testing.assert_array_equal(source[0], [*processor.encode(LONG)[: MAX_SOURCE - 1], EOS_ID])
    short = [*processor.encode("the dog"), EOS_ID]
    np.testing.assert_array_equal(source[1], short + [PAD_ID] * (MAX_SOURCE - len(short)))


@pytest.mark.parametrize("batch, rank", NOT_VECTORS.values(), ids=NOT_VECTORS.keys())
def test_translator_refuses_what_is_not_a_vector(translator: Translator, batch, rank: int):
    with pytest.raises(ValueError, match=rank_error_pattern(rank)):
        translator.translate(batch)
    with pytest.raises(ValueError, match=rank_error_pattern(rank)):
        translator.translate(tf.constant(batch, tf.string))


def test_translator_in_a_graph_of_unknown_rank_refuses_what_is_not_a_vector(
    translator: Translator,
):
    @tf.function(input_signature=[tf.TensorSpec(None, tf.string)])
    def translations(sentences):
        return translator.translate_graph(sentences)["translations"]

    with pytest.raises(tf.errors.InvalidArgumentError, match=rank_error_pattern(2)):
        translations(tf.constant([["the dog"], ["a cat"]]))
    assert translations(tf.constant(["the dog", "a cat"])).shape == (2,)


def test_translator_accepts_python_lists(translator: Translator):
    from_list = translator.translate(["the dog", b"\xffa cat", ""])
    from_tensor = translator.translate(tf.constant(["the dog", b"\xffa cat", ""]))
    texts = translation_texts(from_list["translations"])
    assert texts == translation_texts(from_tensor["translations"])
    assert translator.translate([])["translations"].shape == (0,)


@pytest.mark.parametrize(
    "argument, value",
    [
        ("beam_size", 0),
        ("beam_size", 2.0),
        ("max_source_length", 1),
        ("max_source_length", None),
        ("extra_length", -1),
    ],
)
def test_translator_rejects_bad_arguments(model, tokenizer, argument: str, value):
    with pytest.raises(ValueError, match=argument):
        Translator(model, tokenizer, **{argument: value})
