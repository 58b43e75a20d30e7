"""`keras_attention.evaluation`: sacreBLEU scores with signatures, and batched translation."""

import numpy as np
import pytest
import sacrebleu
import tensorflow as tf

from keras_attention.evaluation import Scores, moses_tokenize, score, translate_all
from tests.shared_data import MULTI30K_DIR, needs_multi30k

REFERENCES = [
    "Der Mann fährt heute ein Fahrrad.",
    "Zwei Hunde spielen im Park.",
    "Die Frau isst einen Apfel.",
    "Ich glaube, dass die Katze schläft.",
]
HYPOTHESES = [
    "der Mann fährt ein Fahrrad.",  # lowercase first word: cased and lowercased BLEU differ
    "Zwei Hunde spielen in dem Park.",
    "DIE FRAU ISST EINEN APFEL.",
    "Ich glaube, die Katze schläft.",
]
SENTENCES = [
    "A much longer sentence than the others.",
    "Hi.",
    "",
    "Grüße aus Köln!",
    "A medium sentence.",
    "日本語の文",
    "Hi.",
]


class FakeTranslate:
    """Stands for `Translator.translate`: records its batches, answers a known function of each
    sentence (reversed, with a non-ASCII mark, as UTF-8 bytes; score minus the length)."""

    def __init__(self):
        self.batches: list[list[str]] = []

    @staticmethod
    def expected(sentence: str) -> tuple[str, float]:
        return sentence[::-1] + "→ü", -float(len(sentence))

    def __call__(self, *, sentences: tf.Tensor) -> dict:
        assert sentences.dtype == tf.string and sentences.shape.rank == 1
        batch = [s.decode("utf-8") for s in sentences.numpy()]
        self.batches.append(batch)
        outputs = [self.expected(s) for s in batch]
        return {
            "translations": tf.constant([text.encode("utf-8") for text, _ in outputs], tf.string),
            "scores": tf.constant([value for _, value in outputs], tf.float32),
        }


def sacrebleu_scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """The three scores as sacreBLEU's own corpus functions compute them."""
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references], tokenize="13a").score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        "bleu_lowercase": sacrebleu.corpus_bleu(
            hypotheses, [references], tokenize="13a", lowercase=True
        ).score,
    }


@pytest.mark.parametrize("count", [1, 2, 4])
def test_score_equals_sacrebleu(count: int):
    hypotheses, references = HYPOTHESES[:count], REFERENCES[:count]
    scores = score(hypotheses, references)
    expected = sacrebleu_scores(hypotheses, references)
    assert scores.bleu == pytest.approx(expected["bleu"], abs=1e-9)
    assert scores.chrf == pytest.approx(expected["chrf"], abs=1e-9)
    assert scores.bleu_lowercase == pytest.approx(expected["bleu_lowercase"], abs=1e-9)
    assert 0.0 < scores.bleu < scores.bleu_lowercase < 100.0  # the casing errors count once


def test_signatures_name_case_and_tokenizer():
    signatures = score(HYPOTHESES, REFERENCES).signatures
    assert set(signatures) == {"bleu", "chrf", "bleu_lowercase", "bleu_tokenized"}
    assert "case:mixed" in signatures["bleu"] and "tok:13a" in signatures["bleu"]
    assert "case:lc" in signatures["bleu_lowercase"] and "tok:13a" in signatures["bleu_lowercase"]
    assert "case:mixed" in signatures["chrf"] and "nc:6" in signatures["chrf"]
    metrics = {
        "bleu": sacrebleu.metrics.BLEU(tokenize="13a"),
        "chrf": sacrebleu.metrics.CHRF(),
        "bleu_lowercase": sacrebleu.metrics.BLEU(tokenize="13a", lowercase=True),
    }
    for name, metric in metrics.items():
        metric.corpus_score(HYPOTHESES, [REFERENCES])
        assert signatures[name] == str(metric.get_signature())


def test_a_perfect_translation_scores_100():
    scores = score(REFERENCES, REFERENCES)
    for value in (scores.bleu, scores.chrf, scores.bleu_lowercase):
        assert value == pytest.approx(100.0)


@pytest.mark.parametrize(("num_hypotheses", "num_references"), [(2, 3), (3, 2), (0, 0), (0, 1)])
def test_score_rejects_mismatched_or_empty_lists(num_hypotheses: int, num_references: int):
    with pytest.raises(
        ValueError, match=f"{num_hypotheses} hypotheses and {num_references} references"
    ):
        score(HYPOTHESES[:num_hypotheses], REFERENCES[:num_references])


def test_summary_prints_every_score_with_its_signature():
    scores = score(HYPOTHESES, REFERENCES)
    lines = scores.summary().split("\n")
    assert len(lines) == 4
    for line, name, value, label in zip(
        lines,
        ("bleu", "chrf", "bleu_lowercase", "bleu_tokenized"),
        (scores.bleu, scores.chrf, scores.bleu_lowercase, scores.bleu_tokenized),
        ("BLEU ", "chrF ", "BLEU (lowercased) ", "BLEU (lowercased, Moses-tokenized) "),
        strict=True,
    ):
        assert line.startswith(f"{label}{value:.2f}")
        assert f"({scores.signatures[name]})" in line


def test_summary_uses_the_fields_given():
    scores = Scores(bleu=12.345, chrf=67.891, bleu_lowercase=23.456, bleu_tokenized=34.567,
                    signatures={"bleu": "sig-b", "chrf": "sig-c", "bleu_lowercase": "sig-l",
                                "bleu_tokenized": "sig-t"})  # fmt: skip
    assert scores.summary() == (
        "BLEU 12.35  (sig-b)\nchrF 67.89  (sig-c)\nBLEU (lowercased) 23.46  (sig-l)\n"
        "BLEU (lowercased, Moses-tokenized) 34.57  (sig-t)"
    )
    assert scores.as_dict() == {
        "bleu": 12.345, "chrf": 67.891, "bleu_lowercase": 23.456, "bleu_tokenized": 34.567,
    }  # fmt: skip


@pytest.mark.parametrize("batch_size", [1, 2, 3, 64])
def test_translate_all_batches_by_length_and_keeps_the_input_order(batch_size: int):
    fake = FakeTranslate()
    translations, scores = translate_all(fake, SENTENCES, batch_size=batch_size)
    expected = [FakeTranslate.expected(s) for s in SENTENCES]
    assert translations == [text for text, _ in expected]
    assert scores.dtype == np.float32 and scores.shape == (len(SENTENCES),)
    np.testing.assert_array_equal(scores, [value for _, value in expected])
    sizes = [len(batch) for batch in fake.batches]
    full, rest = divmod(len(SENTENCES), batch_size)
    assert sizes == [batch_size] * full + ([rest] if rest else [])
    sent = [s for batch in fake.batches for s in batch]
    assert sorted(sent) == sorted(SENTENCES)  # each sentence once
    lengths = [len(s) for s in sent]
    assert lengths == sorted(lengths)


def test_translate_all_decodes_utf8():
    fake = FakeTranslate()
    translations, _ = translate_all(fake, ["Grüße", "日本"])
    assert translations == ["eßürG→ü", "本日→ü"]
    assert all(isinstance(text, str) for text in translations)


def test_translate_all_with_no_sentences_calls_nothing():
    fake = FakeTranslate()
    translations, scores = translate_all(fake, [])
    assert translations == [] and scores.shape == (0,) and fake.batches == []


@pytest.mark.parametrize("batch_size", [0, -1])
def test_translate_all_rejects_a_bad_batch_size(batch_size: int):
    with pytest.raises(ValueError, match=f"batch_size must be >= 1; got batch_size={batch_size}"):
        translate_all(FakeTranslate(), SENTENCES, batch_size=batch_size)


@needs_multi30k
def test_moses_tokenize_remakes_the_published_tokenized_reference():
    raw = (MULTI30K_DIR / "test2016.de").read_text(encoding="utf-8").splitlines()
    published = (MULTI30K_DIR / "test2016.lc.norm.tok.de").read_text(encoding="utf-8")
    assert moses_tokenize(raw, "de") == published.splitlines()


def test_tokenized_bleu_is_lowercased_moses_bleu():
    scores = score(HYPOTHESES, REFERENCES)
    expected = sacrebleu.corpus_bleu(
        moses_tokenize(HYPOTHESES), [moses_tokenize(REFERENCES)], tokenize="none", force=True
    ).score
    assert scores.bleu_tokenized == pytest.approx(expected, abs=1e-9)
    assert moses_tokenize(['Er sagt: "Hallo, Welt!"']) == ["er sagt : &quot; hallo , welt ! &quot;"]
    assert scores.bleu_tokenized > scores.bleu  # case errors no longer count
    assert "case:lc" in scores.signatures["bleu_tokenized"]
    given = score(HYPOTHESES, REFERENCES, tokenized_references=moses_tokenize(REFERENCES))
    assert given.bleu_tokenized == scores.bleu_tokenized
    with pytest.raises(ValueError, match="tokenized_references has 1 lines; references has 4"):
        score(HYPOTHESES, REFERENCES, tokenized_references=["x"])
