"""A run folder's trained model and tokenizer as a preset folder in keras-hub's layout
(`save_run_as_preset`; `python tools/export.py --run-dir RUN --preset-dir DIR`)."""

import os
from pathlib import Path

from keras_attention.models.preset_folder import check_new_preset_dir, save_to_preset
from keras_attention.runs.files import load_run_model, read_run_config, run_beam_search


def save_run_as_preset(
    run_dir: str | os.PathLike,
    preset_dir: str | os.PathLike,
    model_file: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    beam_size: int | None = None,
    alpha: float | None = None,
) -> Path:
    """Writes a run's model, tokenizer and search settings as a preset folder, atomically.

    The preset (`config.json`, `model.weights.h5`, `metadata.json`, `assets/tokenizer/`)
    loads with `Transformer.from_preset(preset_dir)` and `Translator.from_preset(preset_dir)`
    without the run's other files. Its `metadata.json` keeps the run's languages
    (`source_lang`, `target_lang`) and beam search.

    Args:
        run_dir: a folder written by `tools/train.py`.
        preset_dir: the folder to create (it must not exist, or be empty); written to a
            temporary sibling and renamed into place.
        model_file: the run's model file (e.g. `"averaged.keras"`); default `model.keras`,
            else the last epoch checkpoint (see `load_run_model`).
        checkpoint: instead of `model_file`, a checkpoint (`"best"`, `"last"`, a file name).
        beam_size: the beam width to record; default: the run's.
        alpha: the length-penalty exponent to record; default: the run's.

    Returns:
        The path of the preset folder.

    Raises:
        FileExistsError: naming `preset_dir` if it exists and is not an empty folder
            (checked before the model loads).
        FileNotFoundError: naming a missing file of the run.
        ValueError: naming a corrupt file of the run.

    Example:

    >>> from keras_attention.serving.translator import Translator
    >>> save_run_as_preset("runs/translator", "presets/en-de")
    PosixPath('presets/en-de')
    >>> translator = Translator.from_preset("presets/en-de")
    """
    check_new_preset_dir(preset_dir)
    config = read_run_config(run_dir)
    run_beam_size, run_alpha = run_beam_search(run_dir)
    model, tokenizer = load_run_model(run_dir, model_file, checkpoint)
    return save_to_preset(
        model,
        preset_dir,
        tokenizer,
        beam_size=run_beam_size if beam_size is None else beam_size,
        alpha=run_alpha if alpha is None else alpha,
        source_language=config.get("source_lang"),
        target_language=config.get("target_lang"),
    )
