"""The model and tokenizer of a run folder, finished or still training, for the run's code.

What a run folder holds and how each file is read lives in `keras_attention.models.run_folder`
(beside the models, so that `Transformer.from_preset(run_dir)` can read a run without the
training code); this module offers the same names, with the `Transformer` bound where a
model is rebuilt from `config.json`, and `load_run_model` giving the tokenizer as well.

Every file is read with errors that name it: a missing one raises `FileNotFoundError`, a
corrupt one (truncated, not JSON, not a Keras or HDF5 file) a `ValueError` that calls it
corrupt.

This module imports neither `runs.train` nor `evaluation`.
"""

import os
from pathlib import Path

import keras

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
    epoch_checkpoint,
    is_weights_file,
    load_model_file,
    load_run_tokenizer,
    locate_run_model,
    read_run_config,
    resolve_checkpoint,
    run_beam_search,
)

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
    "epoch_checkpoint",
    "is_weights_file",
    "load_checkpoint",
    "load_model_file",
    "load_run_model",
    "load_run_tokenizer",
    "locate_run_model",
    "read_run_config",
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
    return run_folder.build_run_model(Transformer, run_dir, tokenizer)


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
    tokenizer = load_run_tokenizer(run_dir)
    model = run_folder.load_located_model(Transformer, Path(run_dir), path, tokenizer)
    return model, tokenizer
