"""The translate function of a run folder's model, a preset folder or an exported SavedModel,
for the tools that translate and score them (`tools/evaluate.py`, `tools/translate.py`)."""

import os
from collections.abc import Callable

from keras_attention.evaluation import load_saved_model
from keras_attention.models.preset_sources import PRESET, RUN, SAVED_MODEL, folder_kind
from keras_attention.runs.files import load_run_model, run_beam_search
from keras_attention.serving.translator import Translator


def load_translate_function(
    run_dir: str | os.PathLike | None = None,
    saved_model: str | os.PathLike | None = None,
    model_file: str | os.PathLike | None = None,
    beam_size: int | None = None,
    alpha: float | None = None,
    checkpoint: str | os.PathLike | None = None,
    model: str | os.PathLike | None = None,
) -> Callable:
    """The translate function of a run folder's model, a preset folder or a SavedModel.

    The result is called as `translate(sentences=tf.constant([...]))`, as `translate_all`
    does, and returns `{"translations": ..., "scores": ...}`.

    Args:
        run_dir: a folder written by `train_translator` (its model and tokenizer).
        saved_model: an exported version folder (`export/1`).
        model_file: the model's file in `run_dir`, e.g. `averaged.keras`.
        beam_size: with a run or a preset folder: beam width; 1 means greedy search.
            Default: the run's (`config.json`'s `beam_size`, 4 for runs without one; see
            `run_beam_search`) or the preset's (`metadata.json`).
        alpha: with a run or a preset folder: length-penalty exponent. Default: the run's or
            the preset's (0.6 without one).
        checkpoint: with `run_dir`, instead of `model_file`: weights loaded into the model
            rebuilt from the run's `config.json`: `"last"`, `"best"`, a file name in
            `run_dir/checkpoints/` or a path. With neither, `model.keras` if the run has
            finished, else its last epoch checkpoint (see `load_run_model`).
        model: a run folder, a preset folder (`save_to_preset`) or an exported version
            folder, told apart by their files (`preset_sources.folder_kind`). Give exactly
            one of `run_dir`, `saved_model` and `model`.

    Raises:
        ValueError: unless exactly one of `run_dir`, `saved_model` and `model` is given, if
            both `model_file` and `checkpoint` are, or if they (or `beam_size` and `alpha`)
            are given for a folder that has its own; naming a corrupt or foreign file, or a
            `model` folder that holds none of the three.
        FileNotFoundError: naming the missing file or folder.
    """
    given = {"run_dir": run_dir, "saved_model": saved_model, "model": model}
    if sum(value is not None for value in given.values()) != 1:
        raise ValueError(
            "give exactly one of run_dir, saved_model and model; got "
            + ", ".join(f"{name}={value!r}" for name, value in given.items())
        )
    if model is not None:
        kind = folder_kind(model)
        run_only = {"model_file": model_file, "checkpoint": checkpoint}
        if kind != RUN:
            run_only.update({"beam_size": beam_size, "alpha": alpha} if kind == SAVED_MODEL else {})
            extra = [name for name, value in run_only.items() if value is not None]
            if extra:
                raise ValueError(
                    f"{', '.join(extra)}: only for a run folder; {model} is a "
                    f"{'SavedModel' if kind == SAVED_MODEL else 'preset folder'}"
                )
        if kind == SAVED_MODEL:
            return load_saved_model(model)
        if kind == PRESET:
            return _translate_function(Translator.from_preset(model, beam_size, alpha))
        run_dir = model
    if saved_model is not None:
        return load_saved_model(saved_model)
    run_beam_size, run_alpha = run_beam_search(run_dir)  # a corrupt config.json fails first
    beam_size = run_beam_size if beam_size is None else beam_size
    alpha = run_alpha if alpha is None else alpha
    trained, tokenizer = load_run_model(run_dir, model_file, checkpoint)
    return _translate_function(Translator(trained, tokenizer, beam_size, alpha))


def _translate_function(translator: Translator) -> Callable:
    def translate(sentences):
        # A closure, not the bound `translator.translate`: a `tf.function` method holds only
        # a weak reference to its object, which would be collected once this returns.
        return translator.translate(sentences)

    return translate
