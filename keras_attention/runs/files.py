"""The model and tokenizer of a run folder, finished or still training, for the run's code.

What a run folder holds and how each file is read lives in `keras_attention.models.run_folder`
(beside the models, so that `Transformer.from_preset(run_dir)` can read a run without the
training code); this module offers the same names, with the `Transformer` bound where a
model is rebuilt from `config.json`, and `load_run_model` giving the tokenizer as well.

Every file is read with errors that name it: a missing one raises `FileNotFoundError`, a
corrupt one (truncated, not JSON, not a Keras or HDF5 file, a field of another type, a
tokenizer that does not fit the model) a `CorruptFileError` (a `ValueError`) that calls it
corrupt. `config.json` is checked whole against `TrainConfig`'s fields
(`runs.config.check_saved_config`) wherever it is read here; the run's records
(`bleu.json`, `test_metrics.json`, `validation_bleu.json`) against the `TypedDict`s below.
A run started again checks the files it goes on from (`check_run_files`) before it trains.

This module imports neither `runs.train` nor `evaluation`.
"""

import logging
import os
import typing
from pathlib import Path

import keras

from keras_attention.core.file_checks import (
    CorruptFileError,
    check_json_fields,
    read_json_object,
    read_json_record,
)
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.models import Transformer, run_folder
from keras_attention.models.run_folder import (
    BEST_CHECKPOINT,
    CHECKPOINT_DIR,
    CONFIG_FILE,
    DEFAULT_ALPHA,
    DEFAULT_BEAM_SIZE,
    MODEL_FIELDS,
    MODEL_FILE,
    TOKENIZER_FILE,
    WEIGHTS_SUFFIX,
    check_model_file,
    epoch_checkpoint,
    is_weights_file,
    load_model_file,
    load_run_tokenizer,
    locate_run_model,
    resolve_checkpoint,
    search_settings,
)
from keras_attention.runs.config import check_saved_config
from keras_attention.training.resume_check import check_resume_files

logger = logging.getLogger(__name__)

SELECTION_FILE = "bleu.json"
TEST_METRICS_FILE = "test_metrics.json"
VALIDATION_STATE_FILE = "validation_bleu.json"
BACKUP_DIR = "backup"


class Scores(typing.TypedDict, total=False):
    """The scores of a translated split (`evaluation.Scores.as_dict`); `null` for a score that
    was not a finite number (`core.atomic_files.json_text`)."""

    bleu: typing.Required[float | None]
    chrf: typing.Required[float | None]
    bleu_lowercase: float | None
    bleu_tokenized: float | None


class SelectionRecord(typing.TypedDict, total=False):
    """`bleu.json`: the choice of the final weights (`runs.train`) and, once the run is
    exported, the test scores of its SavedModel (`runs.serving_check`)."""

    model: typing.Required[str]
    checkpoints: typing.Required[list[str]]
    validation: typing.Required[dict[str, Scores]]
    beam_size: int
    alpha: float
    selection_seconds: float
    training_seconds: float
    exported: str
    test: Scores
    signatures: dict[str, str]
    export_and_test_seconds: float


class ValidationState(typing.TypedDict):
    """`validation_bleu.json`: the state of `ValidationBleu`, the scores by epoch number."""

    best_epoch: int | None
    best_bleu: float | None
    scores: dict[str, Scores]
    elapsed_s: float


__all__ = [
    "BEST_CHECKPOINT",
    "CHECKPOINT_DIR",
    "CONFIG_FILE",
    "DEFAULT_ALPHA",
    "DEFAULT_BEAM_SIZE",
    "MODEL_FIELDS",
    "MODEL_FILE",
    "TOKENIZER_FILE",
    "WEIGHTS_SUFFIX",
    "build_run_model",
    "check_run_files",
    "epoch_checkpoint",
    "is_weights_file",
    "load_checkpoint",
    "load_model_file",
    "load_run_model",
    "load_run_tokenizer",
    "locate_run_model",
    "read_run_config",
    "read_selection_record",
    "read_test_metrics",
    "read_validation_state",
    "resolve_checkpoint",
    "run_beam_search",
]


def build_run_model(
    run_dir: str | os.PathLike, tokenizer: SubwordTokenizer | None = None
) -> Transformer:
    """A freshly initialized, built `Transformer` of a run's architecture, in float32.

    See `keras_attention.models.run_folder.build_run_model`.

    Args:
        run_dir: a folder written by `tools/train.py`.
        tokenizer: the run's tokenizer, if already loaded (default: read `tokenizer.model`).

    Returns:
        The built model (random weights).

    Raises:
        FileNotFoundError: naming a missing `config.json` or `tokenizer.model`.
        ValueError: naming `config.json` if it is corrupt, lacks a field or describes no
            valid model (e.g. an unknown preset).
    """
    model = run_folder.build_run_model(Transformer, run_dir, tokenizer)
    read_run_config(run_dir)  # the whole file, once the model's own errors came first
    return model


def read_run_config(run_dir: str | os.PathLike) -> dict:
    """The settings of a run (its `config.json`, a `TrainConfig` as JSON), checked whole:
    every field of `TrainConfig`'s type, none unknown, those of every run there
    (`runs.config.check_saved_config`).

    Raises:
        FileNotFoundError: if `config.json` is missing (naming it).
        CorruptFileError: naming it if it is not a JSON object, or naming it and the field
            that is missing, unknown or of another type.
    """
    config = run_folder.read_run_config(run_dir)
    check_saved_config(config, Path(run_dir) / CONFIG_FILE)
    return config


def run_beam_search(run_dir: str | os.PathLike) -> tuple[int, float]:
    """The beam width and length penalty a run decodes with, from its `config.json` checked
    whole (`read_run_config`); see `keras_attention.models.run_folder.run_beam_search`.

    Raises:
        CorruptFileError: naming `config.json` if it is corrupt or holds an invalid value.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        return run_folder.run_beam_search(run_dir)  # the defaults
    return search_settings(read_run_config(run_dir), path)


def load_checkpoint(
    run_dir: str | os.PathLike,
    path: str | os.PathLike,
    tokenizer: SubwordTokenizer | None = None,
) -> Transformer:
    """The run's `Transformer` rebuilt from `config.json`, holding the weights of `path`.

    See `keras_attention.models.run_folder.load_checkpoint`.

    Raises:
        FileNotFoundError: naming a missing file.
        ValueError: naming the checkpoint if it is corrupt or does not hold exactly the
            model's weights, or naming `config.json` (see `build_run_model`).
    """
    return run_folder.load_checkpoint(Transformer, run_dir, path, tokenizer)


def load_run_model(
    run_dir: str | os.PathLike,
    model_file: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
) -> tuple[keras.Model, SubwordTokenizer]:
    """The model and tokenizer of a run folder, finished or still training.

    With neither `model_file` nor `checkpoint`: `model.keras` if the run has finished, else
    its last epoch checkpoint (`locate_run_model` tells which).

    Args:
        run_dir: a folder written by `tools/train.py`.
        model_file: a model file in `run_dir` (or an absolute path), e.g. `"averaged.keras"`,
            read with `keras.models.load_model`; a `.weights.h5` file is loaded as a
            checkpoint.
        checkpoint: weights to load into the model rebuilt from `config.json`: `"last"`,
            `"best"`, a file name in `run_dir/checkpoints/` or a path (see
            `resolve_checkpoint`).

    Returns:
        `(model, tokenizer)`.

    Raises:
        ValueError: if both `model_file` and `checkpoint` are given, or naming a file that
            is corrupt or does not match the run's architecture.
        FileNotFoundError: naming the missing file.
    """
    path = locate_run_model(run_dir, model_file, checkpoint)
    if (Path(run_dir) / CONFIG_FILE).is_file():  # a model copied with its tokenizer has none
        read_run_config(run_dir)
    tokenizer = load_run_tokenizer(run_dir)
    model = run_folder.load_located_model(Transformer, Path(run_dir), path, tokenizer)
    return model, tokenizer


def read_selection_record(run_dir: str | os.PathLike) -> dict:
    """A finished run's `bleu.json` (a `SelectionRecord`), checked.

    Raises:
        FileNotFoundError: naming the file if it is missing.
        CorruptFileError: naming it if it is not such a record.
    """
    return read_json_record(Path(run_dir) / SELECTION_FILE, SelectionRecord)


def read_test_metrics(run_dir: str | os.PathLike) -> dict[str, float | None]:
    """A finished run's `test_metrics.json`: its loss and metrics on the test split, by name.

    Raises:
        FileNotFoundError: naming the file if it is missing.
        CorruptFileError: naming it if it is not a JSON object of numbers with a `loss`
            (`null` for one that was not a finite number).
    """
    path = Path(run_dir) / TEST_METRICS_FILE
    metrics = read_json_object(path)
    check_json_fields(metrics, dict.fromkeys(metrics, float | None), path, required=("loss",))
    return metrics


def read_validation_state(path: str | os.PathLike) -> dict:
    """The state `ValidationBleu` keeps (`validation_bleu.json`, a `ValidationState`),
    checked: its scores by epoch number.

    Raises:
        FileNotFoundError: naming `path` if it is missing.
        CorruptFileError: naming it if it is not such a record.
    """
    state = read_json_record(path, ValidationState)
    epochs = [key for key in state["scores"] if not (key.isdigit() and int(key) >= 1)]
    if epochs:
        raise CorruptFileError(
            f"scores in {path} must be by epoch number; got the key {epochs[0]!r}: the file "
            "is corrupt"
        )
    return state


def check_run_files(run_dir: str | os.PathLike, tokenizer: SubwordTokenizer) -> list[str]:
    """Checks the files a run started again goes on from, before it trains or writes.

    A finished run (`model.keras` there) reports its results: `model.keras` must be a whole
    archive, `bleu.json` and `test_metrics.json` records of the right shape. A killed run
    resumes from its backup and ends by averaging its checkpoints: both are read and
    compared with the run's model (`training.resume_check.check_resume_files`, which
    recovers what a backup holds), and `validation_bleu.json` must be a `ValidationState`.

    Args:
        run_dir: the run's folder, holding this run (its `config.json` and tokenizer).
        tokenizer: the run's tokenizer.

    Returns:
        What was recovered, one line each (also logged as warnings).

    Raises:
        CorruptFileError: naming a damaged file that cannot be recovered, and what to do.
        FileNotFoundError: naming a file a finished run lacks.
    """
    run_dir = Path(run_dir)
    if (run_dir / MODEL_FILE).is_file():
        check_model_file(run_dir / MODEL_FILE)
        read_selection_record(run_dir)
        read_test_metrics(run_dir)
        return []
    notes = []
    backup = run_dir / BACKUP_DIR
    if backup.is_dir() and any(backup.iterdir()):  # else the run starts from its first epoch
        notes = check_resume_files(build_run_model(run_dir, tokenizer), run_dir, backup)
    if (run_dir / VALIDATION_STATE_FILE).is_file():
        read_validation_state(run_dir / VALIDATION_STATE_FILE)
    for note in notes:
        logger.warning("%s", note)
    return notes
