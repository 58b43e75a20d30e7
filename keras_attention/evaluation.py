"""Translating a test set and scoring it with sacreBLEU (BLEU and chrF, with signatures)."""

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import sacrebleu
import sacremoses
import tensorflow as tf

from keras_attention.serving.export import load_exported

SCORE_NAMES = ("bleu", "chrf", "bleu_lowercase", "bleu_tokenized")


@dataclasses.dataclass
class Scores:
    """Corpus-level scores of a set of translations.

    Attributes:
        bleu: sacreBLEU on detokenized, cased text (tokenizer 13a): the primary metric.
        chrf: chrF (character n-gram F-score).
        bleu_lowercase: BLEU on lowercased text (tokenizer 13a).
        bleu_tokenized: BLEU on lowercased, Moses-normalised and Moses-tokenized text (see
            `moses_tokenize`), the convention of the published Multi30k figures.
        signatures: sacreBLEU's signature of each metric, for reproducibility.
    """

    bleu: float
    chrf: float
    bleu_lowercase: float
    bleu_tokenized: float
    signatures: dict

    def as_dict(self) -> dict:
        """The four scores by name (`bleu`, `chrf`, `bleu_lowercase`, `bleu_tokenized`)."""
        return {name: getattr(self, name) for name in SCORE_NAMES}

    def summary(self) -> str:
        """One line per metric, with its signature."""
        return "\n".join(
            [
                f"BLEU {self.bleu:.2f}  ({self.signatures['bleu']})",
                f"chrF {self.chrf:.2f}  ({self.signatures['chrf']})",
                f"BLEU (lowercased) {self.bleu_lowercase:.2f}  "
                f"({self.signatures['bleu_lowercase']})",
                f"BLEU (lowercased, Moses-tokenized) {self.bleu_tokenized:.2f}  "
                f"({self.signatures['bleu_tokenized']})",
            ]
        )


def moses_language(code: str | None) -> str:
    """The Moses tokenizer's language for a language code: its first part, lowercased
    (`"pt_BR"` -> `"pt"`); English rules where the code is unknown (`None`).

    Example:

    >>> moses_language("pt_BR"), moses_language(None)
    ('pt', 'en')
    """
    if not code:
        return "en"
    return code.replace("-", "_").split("_")[0].lower()


def moses_tokenize(lines: Sequence[str], language: str = "de") -> list[str]:
    """Lowercases, normalises punctuation and tokenizes like the Moses scripts.

    This is how Multi30k's `*.lc.norm.tok.*` files were made (`lowercase.perl |
    normalize-punctuation.perl -l L | tokenizer.perl -l L`), with sacremoses, the Python port
    of those scripts: on `test2016.de` it gives `test2016.lc.norm.tok.de` line for line.

    Args:
        lines: detokenized sentences.
        language: their language code (`"de"`, `"en"`, ...).

    Returns:
        The tokenized lines, tokens separated by single spaces.
    """
    normalizer = sacremoses.MosesPunctNormalizer(lang=language)
    tokenizer = sacremoses.MosesTokenizer(lang=language)
    return [
        tokenizer.tokenize(normalizer.normalize(line.lower()), return_str=True) for line in lines
    ]


def score(
    hypotheses: Sequence[str],
    references: Sequence[str],
    language: str = "de",
    tokenized_references: Sequence[str] | None = None,
) -> Scores:
    """Scores translations against one reference each.

    Args:
        hypotheses: the translations, detokenized.
        references: the references, detokenized.
        language: the target language, for the Moses tokenizer.
        tokenized_references: lowercased, Moses-tokenized references for `bleu_tokenized`
            (such as Multi30k's `test2016.lc.norm.tok.de`); default: `references` run
            through `moses_tokenize`.

    Raises:
        ValueError: if the lists differ in length or are empty.
    """
    if len(hypotheses) != len(references) or len(hypotheses) == 0:
        raise ValueError(
            "hypotheses and references must be non-empty and of equal length; got "
            f"{len(hypotheses)} hypotheses and {len(references)} references"
        )
    bleu = sacrebleu.metrics.BLEU(tokenize="13a")
    chrf = sacrebleu.metrics.CHRF()
    bleu_lowercase = sacrebleu.metrics.BLEU(tokenize="13a", lowercase=True)
    if tokenized_references is None:
        tokenized_references = moses_tokenize(references, language)
    elif len(tokenized_references) != len(references):
        raise ValueError(
            f"tokenized_references has {len(tokenized_references)} lines; references has "
            f"{len(references)}"
        )
    bleu_tokenized = sacrebleu.metrics.BLEU(tokenize="none", force=True)
    refs = [list(references)]
    results = {
        "bleu": (bleu, bleu.corpus_score(list(hypotheses), refs)),
        "chrf": (chrf, chrf.corpus_score(list(hypotheses), refs)),
        "bleu_lowercase": (bleu_lowercase, bleu_lowercase.corpus_score(list(hypotheses), refs)),
        "bleu_tokenized": (
            bleu_tokenized,
            bleu_tokenized.corpus_score(
                moses_tokenize(hypotheses, language), [list(tokenized_references)]
            ),
        ),
    }
    signatures = {name: str(metric.get_signature()) for name, (metric, _) in results.items()}
    signatures["bleu_tokenized"] = (
        signatures["bleu_tokenized"].replace("case:mixed", "case:lc") + "|moses-norm+moses-tok"
    )
    values = {name: result.score for name, (_, result) in results.items()}
    return Scores(**values, signatures=signatures)


def translate_all(
    translate: Callable, sentences: Sequence[str], batch_size: int = 64
) -> tuple[list[str], np.ndarray]:
    """Translates many sentences in batches of similar length, in the input order.

    Args:
        translate: a function from a `(batch,)` `tf.string` tensor to a dict with
            `"translations"` and `"scores"`, e.g. `Translator.translate` or the exported
            SavedModel's `serving_default` signature.
        sentences: the sentences.
        batch_size: sentences per call.

    Returns:
        `(translations, scores)` in the order of `sentences`.

    Raises:
        ValueError: if `batch_size` < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got batch_size={batch_size}")
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    translations: list[str] = [""] * len(sentences)
    scores = np.zeros(len(sentences), "float32")
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        result = translate(sentences=tf.constant([sentences[i] for i in chunk], tf.string))
        for index, text, value in zip(
            chunk, result["translations"].numpy(), result["scores"].numpy(), strict=True
        ):
            translations[index] = text.decode("utf-8")
            scores[index] = value
    return translations, scores


def load_saved_model(path: str | os.PathLike) -> Callable:
    """The translate function of an exported translator (`export/1`), with errors naming it.

    Args:
        path: a SavedModel version folder written by `export_translator`.

    Returns:
        Its `serving_default` signature (see `keras_attention.serving.export.load_exported`).

    Raises:
        FileNotFoundError: naming `path` if it holds no `saved_model.pb`.
        ValueError: naming `path` and calling it corrupt if it cannot be loaded or lacks the
            translator's signature.
    """
    path = Path(path)
    if not (path / "saved_model.pb").is_file():
        raise FileNotFoundError(
            f"no SavedModel at {path} (no saved_model.pb); give an exported version folder, "
            "e.g. export/1"
        )
    # TensorFlow raises these for damaged protobufs and variables, and a missing signature.
    try:
        return load_exported(path)
    except (OSError, LookupError, ValueError, tf.errors.OpError) as error:
        raise ValueError(
            f"the SavedModel {path} is corrupt or not an exported translator: {error}"
        ) from error
