"""A trained model in keras-hub's preset layout, which `Transformer.from_preset` loads.

    preset_dir/
        config.json                          the model: keras.saving.serialize_keras_object
        model.weights.h5                     its weights
        metadata.json                        versions, parameter count, languages, search
        assets/tokenizer/tokenizer.model     the SentencePiece model, if saved with one
        assets/tokenizer/tokenizer.recaser.tsv   its recaser, for a lowercasing tokenizer

As in keras-hub, `config.json` is the model's Keras serialization without its compile and
build settings (it names the class, `keras_attention>Transformer`, and its arguments), so
the folder is told apart from a run folder (whose `config.json` holds training settings) by
its `registered_name`. The folder is written to a temporary sibling and renamed into place,
so that it is complete or absent.

The model loads on any backend; only the tokenizer needs TensorFlow, and it is imported when
one is saved or loaded.
"""

import datetime
import importlib.metadata
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import keras

from keras_attention.core.atomic_files import json_text, move_folder_into_place
from keras_attention.core.weights_file import write_weights_file
from keras_attention.models.model_sizes import check_model_config
from keras_attention.models.run_folder import (
    load_tokenizer_file,
    read_json_object,
    search_settings,
)
from keras_attention.training.checkpoints import check_layouts, load_weights_file

if TYPE_CHECKING:
    from keras_attention.data.tokenizer import SubwordTokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
TOKENIZER_FILE = "assets/tokenizer/tokenizer.model"
# What keras-hub leaves out of a preset's config.json: a model is built and compiled anew.
UNSAVED_CONFIG_KEYS = ("compile_config", "build_config")
DISTRIBUTION = "keras-attention"


def is_preset_folder(path: str | os.PathLike) -> bool:
    """Whether `path` is a folder whose `config.json` is a serialized Keras object (it has a
    `registered_name`), as `save_to_preset` and keras-hub write it."""
    try:
        return "registered_name" in read_json_object(Path(path) / CONFIG_FILE)
    except (OSError, ValueError):
        return False


def _without_keys(config: object, keys: tuple[str, ...]) -> object:
    """A copy of a JSON-like `config` without `keys`, at any depth."""
    if isinstance(config, dict):
        return {k: _without_keys(v, keys) for k, v in config.items() if k not in keys}
    if isinstance(config, list):
        return [_without_keys(value, keys) for value in config]
    return config


def _library_version() -> str | None:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def preset_metadata(
    model: keras.Model,
    beam_size: int | None = None,
    alpha: float | None = None,
    source_language: str | None = None,
    target_language: str | None = None,
) -> dict:
    """The `metadata.json` of a preset of `model` (keras-hub's fields, and this library's).

    Returns:
        A dict: `keras_attention_version`, `keras_version`, `parameter_count`, `date_saved`,
        `source_language`, `target_language`, `beam_size` and `alpha` (`None` where unknown).
    """
    return {
        "keras_attention_version": _library_version(),
        "keras_version": keras.version(),
        "parameter_count": model.count_params(),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "source_language": source_language,
        "target_language": target_language,
        "beam_size": beam_size,
        "alpha": None if alpha is None else float(alpha),
    }


def check_new_preset_dir(preset_dir: str | os.PathLike) -> None:
    """Checks that a preset may be written at `preset_dir`: nothing there, or an empty folder.

    Raises:
        FileExistsError: naming `preset_dir` if it exists and is not an empty folder.
    """
    preset_dir = Path(preset_dir)
    if preset_dir.exists() and (not preset_dir.is_dir() or any(preset_dir.iterdir())):
        raise FileExistsError(
            f"{preset_dir} exists and is not an empty folder; a preset is written to a new one"
        )


def save_to_preset(
    model: keras.Model,
    preset_dir: str | os.PathLike,
    tokenizer: "SubwordTokenizer | None" = None,
    beam_size: int | None = None,
    alpha: float | None = None,
    source_language: str | None = None,
    target_language: str | None = None,
) -> Path:
    """Writes `model` (and its tokenizer) as a preset folder in keras-hub's layout.

    The folder is written to a temporary sibling and then renamed to `preset_dir`, so that a
    failed save leaves nothing half-written; an existing non-empty `preset_dir` is refused.

    Args:
        model: a built model of this library (a `Transformer`).
        preset_dir: the folder to create (or an empty one).
        tokenizer: its `SubwordTokenizer`, saved under `assets/tokenizer/` (with the recaser
            of a lowercasing tokenizer); needed by `Translator.from_preset`.
        beam_size: the beam width it decodes with, kept in `metadata.json`.
        alpha: its length-penalty exponent, kept in `metadata.json`.
        source_language: the source language code, if known (`"en"`).
        target_language: the target language code, if known (`"de"`).

    Returns:
        The path of the preset folder.

    Raises:
        FileExistsError: if `preset_dir` exists and is not an empty folder.
        ValueError: if `model` is not built.

    Example:

    >>> from keras_attention import Transformer
    >>> from keras_attention.runs.train import load_run
    >>> model, tokenizer = load_run("runs/translator")
    >>> save_to_preset(model, "presets/en-de", tokenizer, beam_size=4, alpha=0.6)
    PosixPath('presets/en-de')
    >>> sorted(os.listdir("presets/en-de"))
    ['assets', 'config.json', 'metadata.json', 'model.weights.h5']
    >>> model = Transformer.from_preset("presets/en-de")
    """
    if not model.built:
        raise ValueError(f"the model must be built before it is saved; {model.name} is not")
    preset_dir = Path(preset_dir)
    check_new_preset_dir(preset_dir)
    preset_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=preset_dir.parent, prefix=f".{preset_dir.name}-"))
    try:
        folder = staging / "model"
        folder.mkdir()
        config = _without_keys(keras.saving.serialize_keras_object(model), UNSAVED_CONFIG_KEYS)
        (folder / CONFIG_FILE).write_text(json_text(config, indent=4), encoding="utf-8")
        write_weights_file(model, folder / WEIGHTS_FILE)
        metadata = preset_metadata(model, beam_size, alpha, source_language, target_language)
        (folder / METADATA_FILE).write_text(json_text(metadata, indent=4), encoding="utf-8")
        if tokenizer is not None:
            (folder / TOKENIZER_FILE).parent.mkdir(parents=True)
            tokenizer.save(folder / TOKENIZER_FILE)
        check_new_preset_dir(preset_dir)  # not created meanwhile
        move_folder_into_place(staging, preset_dir, overwrite=False)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return preset_dir


def read_preset_metadata(preset_dir: str | os.PathLike) -> dict:
    """The preset's `metadata.json` (see `preset_metadata`).

    Raises:
        FileNotFoundError: naming the missing file.
        ValueError: naming it if it is corrupt.
    """
    return read_json_object(Path(preset_dir) / METADATA_FILE)


def preset_beam_search(preset_dir: str | os.PathLike) -> tuple[int, float]:
    """The beam width and length-penalty exponent of a preset (`metadata.json`), or
    `DEFAULT_BEAM_SIZE` and `DEFAULT_ALPHA` (4 and 0.6) where it records none.

    Raises:
        FileNotFoundError: naming a missing `metadata.json`.
        ValueError: naming it if it is corrupt or holds an invalid value.
    """
    return search_settings(read_preset_metadata(preset_dir), Path(preset_dir) / METADATA_FILE)


def load_preset_folder_model(
    preset_dir: str | os.PathLike,
    model_class: type[keras.Model] | None = None,
    **overrides,
) -> keras.Model:
    """The model of a preset folder, with its weights.

    Args:
        preset_dir: a folder written by `save_to_preset`.
        model_class: the class the model must be an instance of (`None`: any).
        **overrides: constructor arguments that replace the saved ones (e.g. `dropout=0.0`
            or `dtype="bfloat16"`); the weights must still fit.

    Returns:
        The built model, holding the saved weights.

    Raises:
        FileNotFoundError: naming a missing `config.json` or `model.weights.h5`.
        ValueError: naming `config.json` if it is corrupt or describes no model of
            `model_class` (checked before anything is deserialized), or naming it and the
            size at fault if a size is out of limits (`model_sizes.check_model_config`,
            before the model is made), or naming `model.weights.h5` if it is too small for
            the model, corrupt or does not hold exactly the model's weights.
    """
    config_path = Path(preset_dir) / CONFIG_FILE
    weights_path = Path(preset_dir) / WEIGHTS_FILE
    config = read_json_object(config_path)
    if not isinstance(config.get("config"), dict):
        raise ValueError(f"{config_path} is not a serialized Keras model (no config object)")
    if not weights_path.is_file():
        raise FileNotFoundError(f"no model weights at {weights_path}")
    if model_class is not None:
        expected = keras.saving.get_registered_name(model_class)
        if config.get("registered_name") != expected:
            raise ValueError(
                f"{config_path} describes a {config.get('registered_name')!r}, not a "
                f"{model_class.__name__} ({expected!r}); it is not loaded"
            )
    # A build or compile config would be applied as the model is deserialized.
    config = {**_without_keys(config, UNSAVED_CONFIG_KEYS)}
    config["config"] = {**config["config"], **overrides}
    check_model_config(config["config"], config_path, weights_path)  # before it is made
    try:
        # Safe mode: no Python code (a lambda) is deserialized.
        model = keras.saving.deserialize_keras_object(config, safe_mode=True)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{config_path} does not describe a valid model: {error}") from error
    if model_class is not None and not isinstance(model, model_class):
        raise ValueError(
            f"{config_path} describes a {type(model).__name__}, not a {model_class.__name__}"
        )
    model.build()
    check_layouts(model, [weights_path])
    load_weights_file(model, weights_path)
    return model


def load_preset_tokenizer(preset_dir: str | os.PathLike) -> "SubwordTokenizer":
    """The tokenizer of a preset folder (`assets/tokenizer/tokenizer.model`, with its
    recaser if there is one); loads TensorFlow (tensorflow-text).

    Raises:
        FileNotFoundError: naming the missing file (a preset saved without a tokenizer).
        ValueError: naming it if it is corrupt.
    """
    path = Path(preset_dir) / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"no tokenizer at {path}; the preset was saved without one (save_to_preset(model, "
            "preset_dir, tokenizer))"
        )
    return load_tokenizer_file(path)
