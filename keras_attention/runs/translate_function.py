"""The translate function of a run folder's model or of an exported SavedModel, for the
tools that translate and score either (`tools/evaluate.py`, `tools/translate.py`)."""

import os
from collections.abc import Callable

from keras_attention.evaluation import load_saved_model
from keras_attention.export import Translator
from keras_attention.runs.files import load_run_model, run_beam_search


def load_translate_function(
    run_dir: str | os.PathLike | None = None,
    saved_model: str | os.PathLike | None = None,
    model_file: str | os.PathLike | None = None,
    beam_size: int | None = None,
    alpha: float | None = None,
    checkpoint: str | os.PathLike | None = None,
) -> Callable:
    """The translate function of a run folder's model or of an exported SavedModel.

    The result is called as `translate(sentences=tf.constant([...]))`, as `translate_all`
    does, and returns `{"translations": ..., "scores": ...}`.

    Args:
        run_dir: a folder written by `train_translator` (its model and tokenizer).
        saved_model: an exported version folder (`export/1`); give this or `run_dir`.
        model_file: the model's file in `run_dir`, e.g. `averaged.keras`.
        beam_size: with `run_dir`: beam width; 1 means greedy search. Default: the run's
            (`config.json`'s `beam_size`, 4 for runs without one; see
            `run_beam_search`).
        alpha: with `run_dir`: length-penalty exponent. Default: the run's (0.6 without one).
        checkpoint: with `run_dir`, instead of `model_file`: weights loaded into the model
            rebuilt from the run's `config.json`: `"last"`, `"best"`, a file name in
            `run_dir/checkpoints/` or a path. With neither, `model.keras` if the run has
            finished, else its last epoch checkpoint (see `load_run_model`).

    Raises:
        ValueError: unless exactly one of `run_dir` and `saved_model` is given, or if both
            `model_file` and `checkpoint` are; naming a corrupt or foreign file.
        FileNotFoundError: naming the missing file.
    """
    if (run_dir is None) == (saved_model is None):
        raise ValueError(
            f"give exactly one of run_dir and saved_model; got run_dir={run_dir!r}, "
            f"saved_model={saved_model!r}"
        )
    if saved_model is not None:
        return load_saved_model(saved_model)
    run_beam_size, run_alpha = run_beam_search(run_dir)  # a corrupt config.json fails first
    beam_size = run_beam_size if beam_size is None else beam_size
    alpha = run_alpha if alpha is None else alpha
    model, tokenizer = load_run_model(run_dir, model_file, checkpoint)
    translator = Translator(model, tokenizer, beam_size, alpha)

    def translate(sentences):
        # A closure, not the bound `translator.translate`: a `tf.function` method holds only
        # a weak reference to its object, which would be collected once this returns.
        return translator.translate(sentences)

    return translate
