"""The corpus, tokenizer, tiny model with random weights and translator shared by the tests of
the translator and of its export, and the requests both refuse."""

import re

import keras
import numpy as np
import pytest
import sentencepiece

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.models import Transformer
from tests.conftest import to_numpy

VOCABULARY_SIZE, BEAM_SIZE, ALPHA, MAX_SOURCE, EXTRA = 120, 2, 0.6, 16, 5
TINY_MODEL = {
    "num_encoder_layers": 1,
    "num_decoder_layers": 1,
    "d_model": 16,
    "num_heads": 2,
    "intermediate_dim": 32,
    "dropout": 0.0,
}
# 10,000 characters of words the tokenizer knows; the translator keeps MAX_SOURCE - 1 pieces.
LONG = ("the dog sleeps in the park " * 400)[:10_000]
# Requests that are not a vector of sentences, and their rank.
NOT_VECTORS = {
    "scalar": ("The dog sleeps.", 0),
    "matrix": ([["The dog", "sleeps."], ["A cat", "runs."]], 2),
    "column": ([["The dog sleeps."]], 2),
    "empty_matrix": (np.zeros([3, 0], object), 2),
    "rank_3": ([[["The dog sleeps."]]], 3),
}


def rank_error_pattern(rank: int) -> str:
    """The pattern of the error refusing a request of rank `rank`."""
    return re.escape(f"sentences must be a vector (rank 1) of strings; got rank {rank} (shape ")


def translation_texts(translations) -> list[str]:
    """A `tf.string` batch as text; fails if a translation is not valid UTF-8."""
    return [t.decode("utf-8") for t in np.asarray(to_numpy(translations)).reshape(-1)]


def make_translator(model: Transformer, tokenizer: SubwordTokenizer, beam_size: int, **options):
    """The tests' `Translator`: `beam_size`, `ALPHA`, `MAX_SOURCE` and `EXTRA`, and any other
    of its arguments (`chunk_size`)."""
    from keras_attention.serving.translator import Translator  # TensorFlow: only when used

    return Translator(
        model,
        tokenizer,
        beam_size=beam_size,
        alpha=ALPHA,
        max_source_length=MAX_SOURCE,
        extra_length=EXTRA,
        **options,
    )


@pytest.fixture(scope="module")
def corpus() -> dict:
    return generated_splits(num_train=1000, num_val=10, num_test=10)


@pytest.fixture(scope="module")
def tokenizer(corpus: dict) -> SubwordTokenizer:
    texts = [text for pair in corpus["train"] for text in pair]
    return SubwordTokenizer.train(texts, vocabulary_size=VOCABULARY_SIZE)


@pytest.fixture(scope="module")
def processor(tokenizer: SubwordTokenizer) -> sentencepiece.SentencePieceProcessor:
    """The same SentencePiece model in the Python library (independent of the TF graph)."""
    return sentencepiece.SentencePieceProcessor(model_proto=tokenizer.model_proto)


@pytest.fixture(scope="module")
def model(tokenizer: SubwordTokenizer) -> Transformer:
    keras.utils.set_random_seed(7)
    model = Transformer(tokenizer.vocabulary_size, **TINY_MODEL)
    model.build()
    return model


@pytest.fixture(scope="module")
def translator(model: Transformer, tokenizer: SubwordTokenizer):
    return make_translator(model, tokenizer, BEAM_SIZE)
