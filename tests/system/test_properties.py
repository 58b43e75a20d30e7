"""Property-based tests (hypothesis): the subword round trip, the text readers, the export.

Each property is checked on generated inputs (arbitrary Unicode text, arbitrary bytes, arbitrary
lines) rather than on a few chosen ones. The examples are derandomized (the same ones on every
run, no example database) and few, so the module stays fast and reproducible in CI.
"""

import math
import re
from pathlib import Path

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.streaming import read_parallel
from keras_attention.data.text_files import read_lines
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.models import Transformer
from keras_attention.serving.export import export_translator, load_exported
from keras_attention.serving.translator import Translator
from tests.serving.conftest import TINY_MODEL

VOCABULARY_SIZE = 200
FAST = settings(max_examples=50, deadline=None, derandomize=True, database=None)
SLOW = settings(max_examples=25, deadline=None, derandomize=True, database=None)
WORD_BOUNDARY = "\u2581"  # SentencePiece's meta symbol for a space
UNKNOWN = " \u2047 "  # how SentencePiece decodes <unk>
WHITESPACE = [" ", "\t", "\n", "\r", "\u00a0", "\u3000"]
RANK_ERROR = "sentences must be a vector (rank 1) of strings; got rank"

# Lines: any text without the line feed (the separator); `LINE_TEXT` also without the carriage
# return, which is part of a CRLF ending; `LINE_TEXT_WITH_CR` has many.
LINE_TEXT = st.text(st.characters(exclude_characters="\r\n", exclude_categories=("Cs",)))
LINE_TEXT_WITH_CR = st.text(
    st.one_of(
        st.sampled_from("\r\ra "),
        st.characters(exclude_characters="\n", exclude_categories=("Cs",)),
    )
)
SENTENCE = st.one_of(st.text(max_size=60), st.binary(max_size=60))


@pytest.fixture(scope="module")
def training_texts() -> list[str]:
    splits = generated_splits(num_train=500, num_val=0, num_test=0, seed=0)
    return [text for pair in splits["train"] for text in pair]


@pytest.fixture(scope="module")
def tokenizer(training_texts: list[str]) -> SubwordTokenizer:
    return SubwordTokenizer.train(training_texts, VOCABULARY_SIZE)


@pytest.fixture(scope="module")
def processor(tokenizer: SubwordTokenizer) -> sentencepiece.SentencePieceProcessor:
    """The same model in the Python library: its normaliser is the reference."""
    return sentencepiece.SentencePieceProcessor(model_proto=tokenizer.model_proto)


@pytest.fixture(scope="module")
def alphabet(training_texts: list[str]) -> list[str]:
    """Every character of the training text but the space (all kept: full coverage)."""
    return sorted(set("".join(training_texts)) - {" "})


@pytest.fixture(scope="module")
def known_characters(processor: sentencepiece.SentencePieceProcessor) -> set[str]:
    """The characters that are pieces of the vocabulary (the others are unknown)."""
    pieces = (processor.id_to_piece(i) for i in range(processor.get_piece_size()))
    return {piece for piece in pieces if len(piece) == 1}


def _round_trip(tokenizer: SubwordTokenizer, texts: list[str]) -> list[str]:
    decoded = tokenizer.detokenize(tokenizer.tokenize(tf.constant(texts, tf.string)))
    return [text.decode("utf-8") for text in decoded.numpy()]


def _decoded_text(processor, known_characters: set[str], text: str) -> str:
    """What decoding the pieces of `text` gives: SentencePiece's normalised text (NFKC, every
    run of whitespace one space, none at the ends), each run of characters outside the
    vocabulary decoded as one <unk> (" ⁇ ")."""
    normalised = processor.normalize(text)  # words joined by "▁", with a leading "▁"
    unknown_run = f"[^{re.escape(''.join(known_characters))}]+"
    return re.sub(unknown_run, UNKNOWN, normalised).replace(WORD_BOUNDARY, " ")[1:]


# The subword tokenizer.


def test_alphabet_is_in_the_vocabulary(alphabet: list[str], known_characters: set[str]):
    assert len(alphabet) > 40
    assert set(alphabet) <= known_characters


@FAST
@given(data=st.data())
def test_round_trip_of_text_from_the_training_alphabet(tokenizer, alphabet, data):
    """Text made of the training characters and any whitespace comes back exactly, up to
    whitespace: each run becomes one space, and none is left at the ends."""
    text = st.text(st.sampled_from(alphabet + WHITESPACE), max_size=80)
    texts = data.draw(st.lists(text, min_size=1, max_size=4))
    assert _round_trip(tokenizer, texts) == [" ".join(t.split()) for t in texts]


@FAST
@given(texts=st.lists(st.text(max_size=80), min_size=1, max_size=4))
def test_round_trip_of_any_unicode_is_the_normalised_text(
    tokenizer, processor, known_characters, texts: list[str]
):
    assert _round_trip(tokenizer, texts) == [
        _decoded_text(processor, known_characters, text) for text in texts
    ]


@FAST
@given(texts=st.lists(st.text(max_size=80), min_size=1, max_size=4))
def test_any_unicode_gives_valid_ids_and_unk_only_for_unknown_characters(
    tokenizer, processor, known_characters, texts: list[str]
):
    ids = tokenizer.tokenize(tf.constant(texts, tf.string))
    assert ids.dtype == tf.int32
    rows = ids.to_list()
    assert rows == processor.encode(texts)  # the graph agrees with the Python library
    for text, row in zip(texts, rows, strict=True):
        assert all(0 <= i < VOCABULARY_SIZE for i in row)
        assert not {PAD_ID, BOS_ID, EOS_ID} & set(row)
        unknown = set(processor.normalize(text)) - known_characters
        assert (UNK_ID in row) == bool(unknown)


# The text readers.


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("text_files")


@FAST
@given(
    lines=st.lists(LINE_TEXT, min_size=1, max_size=8),
    ending=st.sampled_from(["\n", "\r\n"]),
    final_ending=st.booleans(),
)
def test_lines_read_back_as_written(folder: Path, lines: list[str], ending: str, final_ending):
    """LF or CRLF endings, with or without one after the last line (needed when it is empty)."""
    path = folder / "lines.txt"
    final = ending if final_ending or not lines[-1] else ""
    path.write_bytes((ending.join(lines) + final).encode("utf-8"))
    assert read_lines(path) == lines


@FAST
@given(lines=st.lists(LINE_TEXT_WITH_CR, min_size=1, max_size=8))
@example(lines=["a\r", "\r", "b"])
def test_lines_ending_in_carriage_returns_read_back_as_written(folder: Path, lines: list[str]):
    """Only the line ending goes: a carriage return before a CRLF ending is the line's."""
    path = folder / "crlf.txt"
    path.write_bytes("".join(line + "\r\n" for line in lines).encode("utf-8"))
    assert read_lines(path) == lines


@FAST
@given(data=st.binary(max_size=120))
@example(data=b"")
@example(data=b"\n")
@example(data=b"ok\r\n\xc3\x28\n\xff\n")
@example(data=b"a\r\r\nb\x00\rc")
def test_any_bytes_are_read_or_refused_naming_the_file_and_line(folder: Path, data: bytes):
    path = folder / "bytes.txt"
    path.write_bytes(data)
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()  # after the last line ending
    invalid = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            invalid.append(number)
    if not raw_lines:
        with pytest.raises(ValueError, match=f"empty: {re.escape(str(path))}$"):
            read_lines(path)
    elif invalid:
        with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:{invalid[0]}: not valid"):
            read_lines(path)
    else:
        lines = read_lines(path)
        # The exact handling of carriage returns is the business of the tests above.
        expected = [raw.decode("utf-8").rstrip("\r") for raw in raw_lines]
        assert [line.rstrip("\r") for line in lines] == expected


# `read_parallel` builds a tf.data reader on each call (about 0.3 s): fewer examples.
@SLOW
@given(pairs=st.lists(st.tuples(LINE_TEXT, LINE_TEXT), min_size=1, max_size=8))
def test_parallel_files_keep_the_pairs_with_both_sides_non_blank(folder: Path, pairs):
    sources, targets = folder / "source.txt", folder / "target.txt"
    for path, side in ((sources, 0), (targets, 1)):
        path.write_bytes("".join(pair[side] + "\n" for pair in pairs).encode("utf-8"))
    kept = [(s, t) for s, t in pairs if s.strip() and t.strip()]
    if not kept:
        with pytest.raises(ValueError, match="no non-blank sentence pair"):
            read_parallel(sources, targets)
        return
    assert read_parallel(sources, targets) == ([s for s, _ in kept], [t for _, t in kept])


# 30 pairs of lengths in all, one path: a dozen of them.
@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(lengths=st.tuples(st.integers(1, 6), st.integers(1, 6)).filter(lambda n: n[0] != n[1]))
def test_parallel_files_of_different_lengths_are_refused_naming_both(folder: Path, lengths):
    sources, targets = folder / "short.txt", folder / "long.txt"
    sources.write_text("a\n" * lengths[0], encoding="utf-8")
    targets.write_text("b\n" * lengths[1], encoding="utf-8")
    shorter, longer = (sources, targets) if lengths[0] < lengths[1] else (targets, sources)
    pattern = (
        f"{re.escape(str(shorter))} ends after line {min(lengths)}, "
        f"{re.escape(str(longer))} goes on"
    )
    with pytest.raises(ValueError, match=pattern):
        read_parallel(sources, targets)


# The exported translator (a tiny untrained model).


@pytest.fixture(scope="module")
def translator(tokenizer: SubwordTokenizer) -> Translator:
    keras.utils.set_random_seed(7)
    model = Transformer(tokenizer.vocabulary_size, **TINY_MODEL)
    model.build()
    return Translator(model, tokenizer, beam_size=2, max_source_length=16, extra_length=3)


@pytest.fixture(scope="module")
def served(translator: Translator, tmp_path_factory):
    return load_exported(export_translator(translator, tmp_path_factory.mktemp("export")))


@SLOW
@given(batch=st.lists(SENTENCE, max_size=4))
@example(batch=[])
@example(batch=["", " \t\n", b"\xff\xfe", "the\x00dog", "\u65e5\u672c the dog " * 100])
def test_export_gives_one_translation_per_sentence_for_any_input(served, batch: list):
    outputs = served(sentences=tf.constant(batch, tf.string))
    translations, scores = outputs["translations"].numpy(), outputs["scores"].numpy()
    assert outputs["translations"].dtype == tf.string and outputs["scores"].dtype == tf.float32
    assert translations.shape == scores.shape == (len(batch),)
    texts = [t.decode("utf-8") for t in translations]  # raises unless valid UTF-8
    assert all(math.isfinite(score) for score in scores)
    for sentence, text, score in zip(batch, texts, scores, strict=True):
        if not (sentence.encode() if isinstance(sentence, str) else sentence).strip():
            assert (text, score) == ("", 0.0)


@SLOW
@given(batch=st.lists(SENTENCE, max_size=3))
def test_translator_translates_any_input_as_the_export(served, translator, batch: list):
    served_outputs = served(sentences=tf.constant(batch, tf.string))
    outputs = translator.translate(tf.constant(batch, tf.string))
    assert (
        outputs["translations"].numpy().tolist() == served_outputs["translations"].numpy().tolist()
    )
    np.testing.assert_allclose(
        outputs["scores"].numpy(), served_outputs["scores"].numpy(), atol=1e-5, rtol=1e-5
    )


@SLOW
@given(
    shape=st.lists(st.integers(0, 3), max_size=4).filter(lambda shape: len(shape) != 1),
    sentence=SENTENCE,
)
def test_export_refuses_any_batch_that_is_not_a_vector(served, translator, shape, sentence):
    batch = np.full(shape, sentence if isinstance(sentence, bytes) else sentence.encode(), object)
    pattern = re.escape(f"{RANK_ERROR} {len(shape)} (shape ")
    with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
        served(sentences=tf.constant(batch, tf.string))
    with pytest.raises(ValueError, match=pattern):
        translator.translate(tf.constant(batch, tf.string))
