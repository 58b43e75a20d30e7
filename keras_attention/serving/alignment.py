"""Word alignments from the decoder's cross-attention, in Pharaoh format (`i-j` pairs).

Each target subword is aligned to the source subword its query attends to most, in the
decoder block `layer` (the last by default), averaged over the heads, at the position that
predicts it (teacher forcing on the given translation: one forward pass); subwords are mapped
to whitespace-separated words by SentencePiece's word-start marker, and the word pairs are
listed once each, sorted. EOS is left out on both sides.

Known weakness: attention is not alignment. It is trained to help predict the next word,
not to point at its translation, and is often off by a word, spread over several words, or
drawn to punctuation and the final token; a block other than the last is sometimes better
(Garg et al., 2019, found a 6-layer model's penultimate layer better than its last). Its
error rate was not measured here (no gold alignments of Multi30k). Use it for formatting
and terminology transfer where an approximate link is enough; for word alignment proper,
train a statistical or neural aligner.
"""

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_attention.core.special_tokens import BOS_ID

WORD_START = "\u2581"  # SentencePiece's marker of a piece that starts a word


def word_numbers(pieces: Sequence[str]) -> np.ndarray:
    """The word (0, 1, ...) each subword piece belongs to: a piece starting with `WORD_START`
    starts the next word (the first piece always belongs to word 0).

    Example:

    >>> word_numbers(["\u2581A", "\u2581do", "g", ".", "\u2581runs"]).tolist()
    [0, 1, 1, 1, 2]
    """
    starts = np.array([piece.startswith(WORD_START) for piece in pieces], dtype=np.int64)
    if starts.size:
        starts[0] = 1
    return np.cumsum(starts) - 1


def pharaoh(pairs: set[tuple[int, int]]) -> str:
    """`{(1, 0), (0, 1)}` -> `"0-1 1-0"`."""
    return " ".join(f"{source}-{target}" for source, target in sorted(pairs))


def align_words(
    translator, sentences: list[str], translations: list[str], layer: int = -1
) -> list[str]:
    """The Pharaoh alignment of each sentence with its translation (see the module).

    Args:
        translator: a `Translator` (its tokenizer and model; an `Ensemble`'s members'
            attention is averaged).
        sentences: the source sentences.
        translations: one translation per sentence.
        layer: the decoder block whose attention is read.

    Returns:
        One string per pair, `""` when either side is blank.

    Raises:
        ValueError: if the two lists differ in length.
    """
    if len(sentences) != len(translations):
        raise ValueError(
            f"alignments need one translation per sentence; got {len(sentences)} sentences "
            f"and {len(translations)} translations"
        )
    if not sentences:
        return []
    source_ids, source_lengths = translator.encode(tf.constant(sentences, tf.string))
    target_ids, target_lengths = translator.encode(tf.constant(translations, tf.string), cut=False)
    bos = tf.fill([tf.shape(target_ids)[0], 1], BOS_ID)
    target_in = tf.concat([bos, target_ids[:, :-1]], axis=1)
    weights = np.asarray(
        translator.model.cross_attention_weights(source_ids, target_in, layer)
    )  # (B, T, S)
    tokenizer = translator.tokenizer
    results = []
    for row, (source_length, target_length) in enumerate(
        zip(source_lengths.numpy(), target_lengths.numpy(), strict=True)
    ):
        if source_length == 0 or target_length == 0:
            results.append("")
            continue
        source_words = word_numbers(_pieces(tokenizer, source_ids[row, :source_length]))
        target_words = word_numbers(_pieces(tokenizer, target_ids[row, :target_length]))
        attended = weights[row, :target_length, :source_length].argmax(axis=1)
        results.append(
            pharaoh({(int(source_words[s]), int(target_words[t])) for t, s in enumerate(attended)})
        )
    return results


def _pieces(tokenizer, ids) -> list[str]:
    return [piece.decode("utf-8") for piece in tokenizer.id_to_piece(ids).numpy()]
