"""Translating a test set and scoring it with sacreBLEU (BLEU and chrF, with signatures)."""

import dataclasses
import os
from collections.abc import Callable, Sequence

import numpy as np
import sacrebleu
import tensorflow as tf

from keras_attention.export import Translator, load_exported


@dataclasses.dataclass
class Scores:
    """Corpus-level scores of a set of translations.

    Attributes:
        bleu: sacreBLEU on detokenized, cased text (tokenizer 13a): the primary metric.
        chrf: chrF (character n-gram F-score).
        bleu_lowercase: BLEU on lowercased text (tokenizer 13a), to set beside published
            Multi30k figures, which are lowercased and tokenized.
        signatures: sacreBLEU's signature of each metric, for reproducibility.
    """

    bleu: float
    chrf: float
    bleu_lowercase: float
    signatures: dict

    def summary(self) -> str:
        """One line per metric, with its signature."""
        return "\n".join(
            [
                f"BLEU {self.bleu:.2f}  ({self.signatures['bleu']})",
                f"chrF {self.chrf:.2f}  ({self.signatures['chrf']})",
                f"BLEU (lowercased) {self.bleu_lowercase:.2f}  "
                f"({self.signatures['bleu_lowercase']})",
            ]
        )


def score(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """Scores translations against one reference each.

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
    refs = [list(references)]
    results = {
        "bleu": (bleu, bleu.corpus_score(list(hypotheses), refs)),
        "chrf": (chrf, chrf.corpus_score(list(hypotheses), refs)),
        "bleu_lowercase": (bleu_lowercase, bleu_lowercase.corpus_score(list(hypotheses), refs)),
    }
    return Scores(
        bleu=results["bleu"][1].score,
        chrf=results["chrf"][1].score,
        bleu_lowercase=results["bleu_lowercase"][1].score,
        signatures={name: str(metric.get_signature()) for name, (metric, _) in results.items()},
    )


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


def load_translate_function(
    run_dir: str | os.PathLike | None = None,
    saved_model: str | os.PathLike | None = None,
    model_file: str = "model.keras",
    beam_size: int = 4,
    alpha: float = 0.6,
) -> Callable:
    """The translate function of a run folder's model or of an exported SavedModel.

    The result is called as `translate(sentences=tf.constant([...]))`, as `translate_all`
    does, and returns `{"translations": ..., "scores": ...}`.

    Args:
        run_dir: a folder written by `train_translator` (its `model_file` and tokenizer).
        saved_model: an exported version folder (`export/1`); give this or `run_dir`.
        model_file: the model's file in `run_dir`, e.g. `averaged.keras`.
        beam_size: with `run_dir`: beam width; 1 means greedy search.
        alpha: with `run_dir`: length-penalty exponent.

    Raises:
        ValueError: unless exactly one of `run_dir` and `saved_model` is given.
        FileNotFoundError: naming the missing file.
    """
    if (run_dir is None) == (saved_model is None):
        raise ValueError(
            f"give exactly one of run_dir and saved_model; got run_dir={run_dir!r}, "
            f"saved_model={saved_model!r}"
        )
    if saved_model is not None:
        return load_exported(saved_model)
    # Imported here: `translation_run` imports this module.
    from keras_attention.translation_run import load_run

    model, tokenizer = load_run(run_dir, model_file)
    translator = Translator(model, tokenizer, beam_size, alpha)

    def translate(sentences):
        # A closure, not the bound `translator.translate`: a `tf.function` method holds only
        # a weak reference to its object, which would be collected once this returns.
        return translator.translate(sentences)

    return translate
