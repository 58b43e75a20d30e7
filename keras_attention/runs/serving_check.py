"""The end of a run: export the trained translator as a SavedModel, reload it as TF Serving
would and score the test split with it (`export_and_evaluate`).
"""

import dataclasses
import json
import time
from pathlib import Path

from keras_attention.core.atomic_files import (
    fault_point,
    write_json_atomically,
)
from keras_attention.core.progress import Progress, counted
from keras_attention.evaluation import Scores, moses_language, score, translate_all
from keras_attention.runs.corpus import evaluation_splits
from keras_attention.runs.train import TrainResult
from keras_attention.serving.export import export_translator, load_exported
from keras_attention.serving.translator import Translator

# The validation sentences of the export's warm-up requests.
WARMUP_SENTENCES = 8


@dataclasses.dataclass
class ServingCheck:
    """What `export_and_evaluate` found.

    Attributes:
        export_path: the SavedModel version folder.
        examples: `(source, translation)` pairs translated by the reloaded SavedModel.
        scores: sacreBLEU of the reloaded SavedModel on the test split.
    """

    export_path: Path
    examples: list
    scores: object


def export_and_evaluate(
    result: TrainResult,
    beam_size: int | None = None,
    alpha: float | None = None,
    num_examples: int = 5,
) -> ServingCheck:
    """Exports the trained translator, reloads the SavedModel as TF Serving would, translates
    a few test sentences with it and scores the whole test split with sacreBLEU.

    The export goes to `output_dir/export/1/` (replaced when a resumed run exports again).
    The test scores join the validation scores and the choice of weights in
    `output_dir/bleu.json` (`result.output_dir`: a temporary folder on non-chief workers).
    A run that was exported and scored with the same search already (a finished run run
    again) is not exported again: its SavedModel translates the examples and the recorded
    scores are returned.

    Args:
        result: the trained run.
        beam_size: beam width of the export (default: the run's `beam_size`).
        alpha: its length-penalty exponent (default: the run's `alpha`).
        num_examples: test sentences returned with their translations.
    """
    config = result.config
    beam_size = config.beam_size if beam_size is None else beam_size
    alpha = config.alpha if alpha is None else alpha
    output_dir = result.output_dir
    bleu_path = output_dir / "bleu.json"
    record = json.loads(bleu_path.read_text()) if bleu_path.is_file() else {}
    if _already_exported(record, output_dir / "export" / "1", beam_size, alpha):
        export_path = Path(record["exported"])
        corpus = evaluation_splits(config, output_dir)
        sources = corpus["test"][0]
        examples, _ = translate_all(load_exported(export_path), sources[:num_examples])
        scores = Scores(**record["test"], signatures=record["signatures"])
        return ServingCheck(export_path, list(zip(sources, examples, strict=False)), scores)
    started = time.monotonic()
    translator = Translator(
        result.model, result.tokenizer, beam_size, alpha, max_source_length=config.max_length
    )
    corpus = evaluation_splits(config, output_dir)
    # Version 1, replaced by a resumed run: a run exports its translator once. Its warm-up
    # requests are validation sentences.
    warmup = [sentence for sentence in corpus["val"][0][:WARMUP_SENTENCES] if sentence.strip()]
    export_path = export_translator(
        translator,
        output_dir / "export",
        version=1,
        overwrite=True,
        warmup_sentences=warmup or None,
        metadata={"source_language": config.source_lang, "target_language": config.target_lang},
    )
    fault_point("export")
    serve = load_exported(export_path)
    sources, references = corpus["test"]
    with Progress("scoring the test split", total=len(sources)) as progress:  # at a terminal
        hypotheses, _ = translate_all(counted(serve, progress), sources)
    scores = score(hypotheses, references, moses_language(config.target_lang))
    record.update(
        {
            "exported": str(export_path),
            "test": scores.as_dict(),
            "signatures": scores.signatures,
            "beam_size": beam_size,
            "alpha": alpha,
            "export_and_test_seconds": time.monotonic() - started,
        }
    )
    write_json_atomically(bleu_path, record)
    examples = list(zip(sources[:num_examples], hypotheses[:num_examples], strict=True))
    return ServingCheck(export_path, examples, scores)


def _already_exported(record: dict, export_path: Path, beam_size: int, alpha: float) -> bool:
    """Whether `bleu.json`'s `record` holds the test scores of the SavedModel at
    `export_path`, exported with this beam width and length penalty."""
    return (
        record.get("exported") == str(export_path)
        and (export_path / "saved_model.pb").is_file()
        and {"test", "signatures"} <= set(record)
        and None not in record["test"].values()  # a score written as null is measured again
        and record.get("beam_size") == beam_size
        and record.get("alpha") == alpha
    )
