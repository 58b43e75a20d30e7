"""What a `preset` names, and the model, tokenizer and search settings it gives.

`Transformer.from_preset(preset)` and `Translator.from_preset(preset)` take, like keras-hub's:

- a size name (`"tiny"`, `"small"`, `"base"`, `"big"`; `models.presets`): an untrained model,
  which needs a `vocabulary_size`;
- a run folder written by `tools/train.py` (`models.run_folder`): its trained model,
  `model.keras` once the run has finished, else its last epoch checkpoint;
- a preset folder in keras-hub's layout written by `save_to_preset` (`models.preset_folder`).

A size name wins over a folder of the same name (write `./tiny` for the folder). The tools
also take an exported SavedModel version folder (`saved_model.pb`), which this module
recognises but does not load (`keras_attention.evaluation.load_saved_model` does).

A run or preset folder is data; a SavedModel is a program (its graph may run any
TensorFlow op, writing files among them: docs/security.md). So a folder is a SavedModel
only if it holds nothing but a SavedModel's files (`SAVED_MODEL_ENTRIES`); one that holds a
`saved_model.pb` beside anything else (a preset's or a run's `config.json`, say) is refused
by `folder_kind`, never loaded as either, and `from_preset` never loads a SavedModel.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING

import keras

from keras_attention.models import preset_folder, run_folder
from keras_attention.models.presets import PRESETS, preset_config

if TYPE_CHECKING:
    from keras_attention.data.tokenizer import SubwordTokenizer

SIZE, RUN, PRESET, SAVED_MODEL = "size", "run", "preset", "saved_model"
SAVED_MODEL_FILE = "saved_model.pb"
# What an exported version folder holds (`keras_attention.serving.export`): TensorFlow's
# SavedModel files and TF Serving's `assets.extra`. Names starting with "." are not counted.
SAVED_MODEL_ENTRIES = frozenset(
    {SAVED_MODEL_FILE, "variables", "assets", "assets.extra", "fingerprint.pb"}
)
RUN_EXAMPLE = "Transformer.from_preset('runs/translator')"


def _neither(path: Path, reason: str) -> str:
    return (
        f"{path} is neither a run folder of tools/train.py (config.json with a 'preset' "
        f"field) nor a preset folder of save_to_preset (config.json with a "
        f"'registered_name'): {reason}"
    )


def folder_kind(path: str | os.PathLike) -> str:
    """What the folder `path` holds: `RUN`, `PRESET` or `SAVED_MODEL`.

    Needs neither Keras nor TensorFlow: only the files' names and `config.json` are read.
    A folder is a SavedModel only if it holds nothing but a SavedModel's files
    (`SAVED_MODEL_ENTRIES`): a `saved_model.pb` beside a run's or a preset's files is
    refused, so that a program planted in a data folder is never taken for its model.

    Args:
        path: a folder.

    Returns:
        `"run"` (a run folder of `tools/train.py`), `"preset"` (a preset folder of
        `save_to_preset`) or `"saved_model"` (an exported version folder).

    Raises:
        FileNotFoundError: naming `path` if it does not exist or lacks `config.json`.
        ValueError: naming `path` if it is a file or holds a `saved_model.pb` beside other
            files, or naming its `config.json` if that is corrupt or holds neither a run's
            settings nor a serialized model.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no folder {path}")
    if not path.is_dir():
        raise ValueError(
            f"{path} is a file; expected a run folder, a preset folder or a SavedModel folder"
        )
    if (path / SAVED_MODEL_FILE).is_file():
        others = sorted(
            entry.name
            for entry in path.iterdir()
            if entry.name not in SAVED_MODEL_ENTRIES and not entry.name.startswith(".")
        )
        if others:
            raise ValueError(
                f"{path} holds a SavedModel ({SAVED_MODEL_FILE}) and other files "
                f"({', '.join(others[:4])}{', ...' if len(others) > 4 else ''}): it is "
                "loaded neither as a SavedModel (a program, loaded only from a folder that "
                "holds nothing else, as an export writes it) nor as a run or preset folder; "
                f"remove the file that does not belong there (see docs/security.md)"
            )
        return SAVED_MODEL
    config_path = path / run_folder.CONFIG_FILE
    if not config_path.is_file():
        raise FileNotFoundError(_neither(path, f"it has no {run_folder.CONFIG_FILE}"))
    if run_folder.is_run_folder(path):
        return RUN
    if preset_folder.is_preset_folder(path):
        return PRESET
    run_folder.read_json_object(config_path)  # raises naming config.json if it is corrupt
    raise ValueError(_neither(path, f"its {run_folder.CONFIG_FILE} has neither field"))


def preset_kind(preset: str | os.PathLike) -> str:
    """What `preset` names: `SIZE` (a size name), `RUN` or `PRESET` (a folder).

    Raises:
        ValueError: naming `preset` if it is neither a size name nor an existing path, a
            file or a SavedModel, or naming its `config.json` if that is corrupt or is
            neither a run's nor a preset's.
        FileNotFoundError: naming a folder without `config.json`.
    """
    if isinstance(preset, str) and preset in PRESETS:
        return SIZE
    path = Path(preset)
    if not path.exists():
        raise ValueError(
            f"preset must be one of {sorted(PRESETS)} (a size) or the path of a run folder or "
            f"a preset folder; got preset={str(preset)!r}, which is neither a size nor an "
            "existing path"
        )
    kind = folder_kind(path)
    if kind == SAVED_MODEL:
        raise ValueError(
            f"{path} is an exported SavedModel ({SAVED_MODEL_FILE}); from_preset loads a run "
            "folder or a preset folder (load a SavedModel with "
            "keras_attention.serving.export.load_exported)"
        )
    return kind


def _with_overrides(
    model_class: type[keras.Model], model: keras.Model, overrides: dict, path: Path
) -> keras.Model:
    """`model` rebuilt with `overrides` (e.g. `dropout=0.0`), holding its weights."""
    if not overrides:
        return model
    try:
        rebuilt = model_class.from_config({**model.get_config(), **overrides})
        rebuilt.build()
        rebuilt.set_weights(model.get_weights())
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"the overrides {overrides} do not fit the trained model in {path}: {error}"
        ) from error
    return rebuilt


def load_model(
    model_class: type[keras.Model],
    preset: str | os.PathLike,
    vocabulary_size: int | None = None,
    **overrides,
) -> keras.Model:
    """The model that `preset` names (see the module docstring); `Transformer.from_preset`.

    Args:
        model_class: the class to build (`Transformer`).
        preset: a size name, a run folder or a preset folder.
        vocabulary_size: the vocabulary size of an untrained model (a size name); for a
            folder, `None` or the trained model's.
        **overrides: constructor arguments that replace the preset's (e.g. `dropout=0.0`);
            for a trained model, the weights must still fit.

    Returns:
        The model: untrained for a size name, else built and holding the trained weights.

    Raises:
        ValueError: for a size name without `vocabulary_size`, a folder's model whose
            vocabulary size is not `vocabulary_size`, a `preset` that names no model (see
            `preset_kind`), or (naming the file) a corrupt file.
        FileNotFoundError: naming the missing file.
    """
    kind = preset_kind(preset)
    if kind == SIZE:
        if vocabulary_size is None:
            raise ValueError(
                f"from_preset({preset!r}) makes an untrained model and needs "
                f"vocabulary_size=...; a trained run loads from its folder: {RUN_EXAMPLE}"
            )
        return model_class(vocabulary_size=vocabulary_size, **preset_config(preset, **overrides))
    path = Path(preset)
    if kind == RUN:
        model = run_folder.load_run_model(model_class, path)
        model = _with_overrides(model_class, model, overrides, path)
    else:
        model = preset_folder.load_preset_folder_model(path, model_class, **overrides)
    if vocabulary_size is not None and vocabulary_size != model.vocabulary_size:
        raise ValueError(
            f"the model in {path} has vocabulary_size={model.vocabulary_size}; got "
            f"vocabulary_size={vocabulary_size} (leave it out for a trained model)"
        )
    return model


def _folder(preset: str | os.PathLike) -> tuple[Path, str]:
    """`preset`'s path and kind, if it is a run folder or a preset folder."""
    kind = preset_kind(preset)
    if kind == SIZE:
        raise ValueError(
            f"{preset!r} is a size name: an untrained model without a tokenizer; give a run "
            "folder or a preset folder"
        )
    return Path(preset), kind


def load_tokenizer(
    preset: str | os.PathLike, model: keras.Model | None = None
) -> "SubwordTokenizer":
    """The tokenizer of a run folder or a preset folder; loads TensorFlow.

    Args:
        preset: the folder.
        model: its model, if loaded: the tokenizer must fit it (`check_tokenizer_fits`).

    Raises:
        ValueError: for a size name or a `preset` that names no model (see `preset_kind`),
            or naming a corrupt file, or a tokenizer file that does not fit `model`.
        FileNotFoundError: naming the missing file.
    """
    path, kind = _folder(preset)
    if kind == RUN:
        tokenizer = run_folder.load_run_tokenizer(path)
    else:
        tokenizer = preset_folder.load_preset_tokenizer(path)
    file = tokenizer_file(path)
    if model is not None:
        expected = getattr(model, "vocabulary_size", None)
        owner = f"the model of {path}"
        run_folder.check_tokenizer_fits(file, tokenizer.vocabulary_size, expected, owner)
    return tokenizer


def tokenizer_file(preset: str | os.PathLike) -> Path:
    """The SentencePiece model file of a run folder or a preset folder (its recaser, if
    any, is beside it: `keras_attention.data.tokenizer.recaser_path`)."""
    path, kind = _folder(preset)
    return path / (run_folder.TOKENIZER_FILE if kind == RUN else preset_folder.TOKENIZER_FILE)


def beam_search_settings(preset: str | os.PathLike) -> tuple[int, float]:
    """`(beam_size, alpha)` of a run folder (`config.json`) or a preset folder
    (`metadata.json`); 4 and 0.6 where they are not recorded.

    Raises:
        ValueError: for a size name or a `preset` that names no model (see `preset_kind`),
            or naming a corrupt file or an invalid value.
        FileNotFoundError: naming a missing file (a preset's `metadata.json`).
    """
    path, kind = _folder(preset)
    if kind == RUN:
        return run_folder.run_beam_search(path)
    return preset_folder.preset_beam_search(path)
