"""The corpus, tokenizer and tiny model with random weights shared by the export tests."""

import keras
import pytest
import sentencepiece

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.models import Transformer

VOCABULARY_SIZE, BEAM_SIZE, ALPHA, MAX_SOURCE, EXTRA = 120, 2, 0.6, 16, 5
TINY_MODEL = {
    "num_encoder_layers": 1,
    "num_decoder_layers": 1,
    "d_model": 16,
    "num_heads": 2,
    "intermediate_dim": 32,
    "dropout": 0.0,
}


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
