"""The recaser: each of its rules on a corpus small enough to work out by hand, its file format,
and a lowercasing tokenizer around it."""

from pathlib import Path

import pytest
import tensorflow as tf

from keras_attention.data.recaser import Recaser
from keras_attention.data.tokenizer import SubwordTokenizer, recaser_path

CORPUS = [
    "Ein Mann isst zum Essen einen Apfel.",
    "Zwei Männer essen Äpfel.",
    "Die Frauen essen und trinken.",
    "Eine Frau trinkt aus einem Glas.",
    'Ein Kind trägt ein "T-Shirt" von Nike.',
    "Ein Kind sieht einen Mann.",
]


@pytest.fixture(scope="module")
def recaser() -> Recaser:
    return Recaser.train(CORPUS)


def recase(recaser: Recaser, lines: list[str]) -> list[str]:
    return [line.decode("utf-8") for line in recaser.recase(lines).numpy()]


def test_the_most_frequent_form_of_each_word_is_learned(recaser: Recaser):
    # Sentence-initial words are not counted: "ein" is "ein" (seen inside sentences only).
    assert recaser.words["mann"] == "Mann" and recaser.words["ein"] == "ein"
    assert recaser.words["essen"] == "essen"  # 2 "essen" against 1 "Essen"
    assert recaser.words["t-shirt"] == "T-Shirt"  # the quotes are not part of the word
    assert "zwei" not in recaser.words  # seen only at the start of a sentence
    # After "zum", "essen" is written "Essen": a pair, since it differs from the word's form.
    assert recaser.pairs == {"zum essen": "Essen"}


def test_each_rule_restores_its_capitals(recaser: Recaser):
    lines = [
        "ein mann sieht zwei männer.",  # words; the first word of a sentence
        "die frauen essen zum essen.",  # the pair "zum essen" against the word "essen"
        "ein kind trinkt aus einem trinkglas.",  # unknown: its known ending "glas" is "Glas"
        "ein kind sieht einen flakon.",  # unknown with no known ending: as it is
        'zwei kinder tragen "t-shirts", "t-shirt" oder (nike)!',  # edges kept
    ]
    assert recase(recaser, lines) == [
        "Ein Mann sieht zwei Männer.",
        "Die Frauen essen zum Essen.",
        "Ein Kind trinkt aus einem Trinkglas.",
        "Ein Kind sieht einen flakon.",
        'Zwei kinder tragen "t-shirts", "T-Shirt" oder (Nike)!',
    ]


def test_capitals_and_letters_outside_ascii(recaser: Recaser):
    # "äpfel" is known as "Äpfel"; a sentence starting with "ä" gets "Ä"; "ß" stays.
    assert recase(recaser, ["ärger über äpfel und straßen"]) == ["Ärger über Äpfel und straßen"]


def test_whitespace_empty_lines_and_empty_batches(recaser: Recaser):
    assert recase(recaser, ["  ein   mann ", "", "   "]) == ["Ein Mann", "", ""]
    assert recaser.recase(tf.zeros([0], tf.string)).shape == (0,)


def test_recase_runs_in_a_graph_of_any_batch(recaser: Recaser):
    graph = tf.function(recaser.recase, input_signature=[tf.TensorSpec([None], tf.string)])
    assert [x.decode() for x in graph(tf.constant(["ein mann.", "zwei frauen."])).numpy()] == [
        "Ein Mann.",
        "Zwei Frauen.",
    ]


def test_the_text_format_round_trips(recaser: Recaser, tmp_path: Path):
    path = recaser.save(tmp_path / "recaser.tsv")
    again = Recaser.load(path)
    assert (again.words, again.pairs) == (recaser.words, recaser.pairs)
    assert recase(again, ["zum essen"]) == recase(recaser, ["zum essen"])


@pytest.mark.parametrize(
    "text, message",
    [
        ("w\tmann\tMann\nx\tein\tein\n", "line 2: expected 'w' or 'p'"),
        ("w\tmann\n", "line 1: expected 'w' or 'p'"),
        ("p\tzum essen\tEssen\n", "holds no word"),
    ],
)
def test_a_malformed_file_is_named_with_its_line(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}.*{message}|{message}"):
        Recaser.load(path)
    with pytest.raises(FileNotFoundError, match="no recaser file"):
        Recaser.load(tmp_path / "missing.tsv")


def test_nothing_to_learn_from_is_refused():
    with pytest.raises(ValueError, match="no word"):
        Recaser.train(["Hallo", "  ", "!!"])  # only first words and punctuation


def test_a_lowercasing_tokenizer_lowercases_and_recases(tmp_path: Path):
    sources = [f"A man number {i} eats an apple." for i in range(40)]
    tokenizer = SubwordTokenizer.train(sources + CORPUS * 10, 60, recase_texts=CORPUS)
    assert tokenizer.lowercase
    cased, lower = tokenizer.tokenize(["Ein MANN isst."]), tokenizer.tokenize(["ein mann isst."])
    assert cased.to_list() == lower.to_list()
    assert tokenizer.detokenize(lower.to_tensor()).numpy().tolist() == [b"Ein Mann isst."]
    # Saved and loaded with its recaser; a plain tokenizer saved over it removes the file.
    path = tokenizer.save(tmp_path / "tokenizer.model")
    assert recaser_path(path) == tmp_path / "tokenizer.recaser.tsv" and recaser_path(path).exists()
    loaded = SubwordTokenizer.load(path)
    assert loaded.lowercase and loaded.recaser.words == tokenizer.recaser.words
    SubwordTokenizer(tokenizer.model_proto).save(path)
    assert not recaser_path(path).exists() and not SubwordTokenizer.load(path).lowercase
