"""The end of a run: which weights to keep, chosen on the validation split.

The candidates are the last epoch's weights, the best single checkpoint by validation BLEU,
and averages of the last K epoch checkpoints (paper, Section 6.1) and of the K best ones.
Each is translated with the final search settings and scored; the best validation sacreBLEU
wins (chrF breaks ties).
"""

import dataclasses
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np

from keras_attention.core.progress import Progress, counted
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.evaluation import score, translate_all
from keras_attention.runs.report_lines import validation_line
from keras_attention.serving.translator import Translator
from keras_attention.training.checkpoints import average_checkpoints

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class Selection:
    """What `select_weights` chose.

    Attributes:
        name: the winning candidate (`"last"`, `"best"`, `"average_last_5"`, ...).
        checkpoints: the checkpoint files averaged into it (empty for `"last"`).
        validation: validation scores of every candidate, by name.
    """

    name: str
    checkpoints: list[str]
    validation: dict[str, dict]


def epoch_checkpoints(directory: str | os.PathLike) -> dict[int, Path]:
    """The `epoch_NNN.weights.h5` files of `directory`, by epoch number."""
    found = {}
    for path in Path(directory).glob("epoch_*.weights.h5"):
        if match := re.fullmatch(r"epoch_(\d+)\.weights\.h5", path.name):
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def candidate_checkpoints(
    checkpoints: dict[int, Path],
    epoch_bleu: dict[int, float | None],
    average: Sequence[int] = (5,),
) -> dict[str, list[Path]]:
    """The candidates' checkpoint files, by name.

    Args:
        checkpoints: epoch number -> checkpoint file (`epoch_checkpoints`).
        epoch_bleu: epoch number -> validation BLEU, for the epochs that were scored (`None`,
            a score that was not a number, counts as not scored).
        average: the K of the averages of the last K and of the best K checkpoints; a K
            larger than the number of checkpoints (or of scored ones) is left out.

    Returns:
        `{"best": [...], "average_last_K": [...], "average_best_K": [...]}` (the last
        epoch's own weights, `"last"`, are the model's and need no file).
    """
    candidates = {}
    bleu = {e: b for e, b in epoch_bleu.items() if b is not None and e in checkpoints}
    scored = sorted(bleu, key=bleu.get)
    if scored:
        candidates["best"] = [checkpoints[scored[-1]]]
    epochs = list(checkpoints)
    for k in sorted(set(average)):
        if 1 < k <= len(epochs):
            candidates[f"average_last_{k}"] = [checkpoints[e] for e in epochs[-k:]]
        if 1 < k <= len(scored):
            candidates[f"average_best_{k}"] = [checkpoints[e] for e in sorted(scored[-k:])]
    # Two names for the same files are scored once.
    unique, seen = {}, set()
    for name, paths in candidates.items():
        if tuple(paths) not in seen:
            seen.add(tuple(paths))
            unique[name] = paths
    return unique


def select_weights(
    model: keras.Model,
    tokenizer: SubwordTokenizer,
    candidates: dict[str, list[Path]],
    sources: Sequence[str],
    references: Sequence[str],
    beam_size: int = 4,
    alpha: float = 0.6,
    max_source_length: int = 128,
    language: str = "de",
    translator: Translator | None = None,
) -> Selection:
    """Scores the model's current weights (`"last"`) and every candidate on validation data,
    and leaves the model holding the winner's weights. Each candidate's scores are logged at
    DEBUG level only: they are in the `Selection` returned, which a caller reports once
    (`tools/train.py` prints them in its summary).

    Args:
        model: the trained model; its current weights are the `"last"` candidate.
        tokenizer: its tokenizer.
        candidates: name -> checkpoint files to average (`candidate_checkpoints`).
        sources: validation sources.
        references: validation references.
        beam_size: beam width of the final search (1: greedy).
        alpha: its length-penalty exponent.
        max_source_length: the longest source kept, in tokens.
        language: the target language (for the Moses-tokenized BLEU).
        translator: a `Translator` of `model` with these search settings to use, whose
            search is already traced (a run's greedy validation translator, when the final
            search is greedy too); `None`: a new one.

    Returns:
        A `Selection`.

    Raises:
        ValueError: if `translator` is of another model or has other search settings.
    """
    if translator is None:
        translator = Translator(model, tokenizer, beam_size, alpha, max_source_length)
    else:
        settings = _search_settings(beam_size, alpha, max_source_length)
        given = _search_settings(
            translator.beam_size, translator.alpha, translator.max_source_length
        )
        if translator.model is not model or given != settings:
            raise ValueError(
                f"the translator searches {given} (beam size, alpha, longest source) of "
                f"{translator.model.name}; the selection needs {settings} of {model.name}"
            )

    def translate(sentences):
        return translator.translate(sentences)

    def validate(name: str) -> dict:
        label = f"choosing weights: {name} on validation"
        with Progress(label, total=len(sources)) as progress:  # at a terminal only
            hypotheses, _ = translate_all(counted(translate, progress), sources)
        return score(hypotheses, references, language).as_dict()

    last_weights = model.get_weights()
    validation = {"last": validate("last")}
    # DEBUG: the run's summary prints them (`Selection.validation`), once.
    logger.debug("%s", validation_line("last", validation["last"]))
    for name, paths in candidates.items():
        average_checkpoints(model, paths)
        # The best epoch is often the last: the same weights are not translated again.
        held = model.get_weights()
        same = all(np.array_equal(a, b) for a, b in zip(held, last_weights, strict=True))
        validation[name] = dict(validation["last"]) if same else validate(name)
        logger.debug("%s", validation_line(name, validation[name]))
    winner = max(validation, key=lambda name: (validation[name]["bleu"], validation[name]["chrf"]))
    if winner == "last":
        model.set_weights(last_weights)
    else:
        average_checkpoints(model, candidates[winner])
    files = [str(path) for path in candidates.get(winner, [])]
    return Selection(winner, files, validation)


def _search_settings(beam_size: int, alpha: float, max_source_length: int) -> tuple:
    """(beam size, alpha, longest source) as a search uses them: alpha is `None` for greedy
    search, which has no length penalty."""
    return beam_size, alpha if beam_size > 1 else None, max_source_length
