"""Quick guards of the data path (issue 53, point 12), each against a bug that only slow tests
caught before: a label visible to the decoder at its own position in the training batches,
and a detokenizer that drops the last token.

Both run on hand-made ids and a SentencePiece model of 16 pieces (learned in milliseconds),
not on the generated corpus's tokenizer that the other data tests share.
"""

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.data.pipeline import EncodedPairs, make_batches
from keras_attention.data.tokenizer import SubwordTokenizer

# Targets of distinct tokens, so that a label seen at or before its own position can only
# be a leak. Ids up to 27 (no tokenizer is involved).
TARGETS = [[10, 11, 12], [13], [14, 15, 16, 17, 18, 19, 20], [21, 22]]
SOURCES = [[4, 5], [6, 7, 8], [9], [23, 24, 25, 26]]


def test_decoder_inputs_are_the_labels_shifted_right_and_never_show_a_label():
    encoded = EncodedPairs(
        sources=tf.ragged.constant([[*s, EOS_ID] for s in SOURCES], dtype=tf.int32),
        targets=tf.ragged.constant([[BOS_ID, *t, EOS_ID] for t in TARGETS], dtype=tf.int32),
        num_read=len(TARGETS),
        num_dropped=0,
        num_cut=0,
    )
    rows = []
    for (_, target_in), target_out in make_batches(encoded, max_tokens=64, max_length=16):
        for decoder_input, labels in zip(target_in.numpy(), target_out.numpy(), strict=True):
            if not labels.any():  # a bucket's filler row
                continue
            length = int((labels != PAD_ID).sum())
            # The decoder reads BOS and the labels before each position...
            assert decoder_input[0] == BOS_ID
            np.testing.assert_array_equal(decoder_input[1:length], labels[: length - 1])
            assert np.all(decoder_input[length:] == PAD_ID)
            # ...so no label is among the inputs up to its own position.
            for position in range(length):
                assert labels[position] not in decoder_input[: position + 1], (
                    f"label {labels[position]} visible at position {position}: "
                    f"input {decoder_input}, labels {labels}"
                )
            rows.append(labels[: length - 1].tolist())
            assert labels[length - 1] == EOS_ID
    assert sorted(rows) == sorted(TARGETS)  # every pair once


# Four letters make a SentencePiece model of 16 pieces in a few milliseconds (the CTranslate2
# quick guards use it too).
TINY_TEXTS = ["abc bad cab", "dab cad bcd", "add bcc aab", "cab dab bad abc"] * 3


@pytest.fixture(scope="module")
def tiny_tokenizer() -> SubwordTokenizer:
    return SubwordTokenizer.train(TINY_TEXTS, vocabulary_size=16)


def test_detokenize_keeps_the_last_token(tiny_tokenizer):
    sentences = ["abc bad cab", "dab", "cab dab bad abc"]
    ids = tiny_tokenizer.tokenize(sentences)
    assert [text.decode() for text in tiny_tokenizer.detokenize(ids).numpy()] == sentences
    # Dense rows as a search returns them: the tokens, EOS, then padding (the longest row
    # with no room for EOS or padding).
    width = int(ids.row_lengths().numpy().max())
    rows = np.full((len(sentences), width), PAD_ID, "int32")
    for number, row in enumerate(ids.to_list()):
        rows[number, : len(row) + 1] = [*row, EOS_ID][:width]
    assert [text.decode() for text in tiny_tokenizer.detokenize(rows).numpy()] == sentences
