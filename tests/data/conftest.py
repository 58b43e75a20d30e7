"""Fixtures shared by the pipeline and streaming tests: a tokenizer of the generated corpus."""

import pytest

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.tokenizer import SubwordTokenizer

GENERATED = generated_splits(num_train=400, num_val=0, num_test=0, seed=1)["train"]
GENERATED_SOURCES = [en for en, _ in GENERATED]
GENERATED_TARGETS = [de for _, de in GENERATED]


def repeat(word: str, count: int) -> str:
    return " ".join([word] * count)


@pytest.fixture(scope="module")
def tokenizer():
    return SubwordTokenizer.train(GENERATED_SOURCES + GENERATED_TARGETS, 300)


@pytest.fixture(scope="module")
def one_piece_word(tokenizer):
    """A word that is one subword, so that `repeat(word, n)` is `n` tokens long."""
    for word in ("the", "die", "The", "Die", "der"):
        if tokenizer.tokenize([repeat(word, 7)]).row_lengths().numpy().tolist() == [7]:
            return word
    raise AssertionError("no one-piece word in the test vocabulary")
