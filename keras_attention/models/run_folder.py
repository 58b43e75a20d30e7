"""The model of a run folder, from its final `.keras` file or from any epoch checkpoint.

A run folder written by `tools/train.py` holds `config.json`, `tokenizer.model`,
`checkpoints/epoch_NNN.weights.h5` after every epoch and, once the run has finished,
`model.keras`. The checkpoints hold weights only; the model they belong to is rebuilt from
`config.json` and the tokenizer's vocabulary size, so that a run can be scored or averaged
while it still trains.

Every file is read with errors that name it: a missing one raises `FileNotFoundError`, a
corrupt one (truncated, not JSON, not a Keras or HDF5 file, a tokenizer that does not fit the
model or is not the file `tokenizer.json` records) a `CorruptFileError` (a `ValueError`)
that calls it corrupt. `config.json` is checked here for the fields a model is built and
decodes with; `keras_attention.runs.files` checks it whole, against `TrainConfig`.

This module sits with the models (not in `keras_attention.runs`) so that
`Transformer.from_preset(run_dir)` and `Translator.from_preset(run_dir)` can read a run
without importing the training code. It imports no model class either (the model's own
module imports this one): the functions that build a model take its class, and
`keras_attention.runs.files` offers them with the `Transformer` bound. Only the tokenizer
needs TensorFlow, and it is imported when one is loaded: a run's model loads on any backend.
"""

import contextlib
import json
import numbers
import os
import typing
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import keras

from keras_attention.core.file_checks import (
    CorruptFileError,
    FileDigest,
    check_file_digest,
    file_digest,
    read_json_object,
    read_json_record,
)
from keras_attention.models.model_sizes import check_model_config
from keras_attention.models.presets import preset_config
from keras_attention.training.checkpoints import (
    check_layouts,
    last_checkpoints,
    load_weights_file,
)

if TYPE_CHECKING:
    from keras_attention.data.tokenizer import SubwordTokenizer

CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.model"
TOKENIZER_RECORD = "tokenizer.json"
RECASER_FILE = "tokenizer.recaser.tsv"  # `data.tokenizer.recaser_path(TOKENIZER_FILE)`
TOKENIZER_FILES = (TOKENIZER_FILE, RECASER_FILE)  # whose digests `tokenizer.json` records
MODEL_FILE = "model.keras"
ARCHIVE_CONFIG = "config.json"  # the model's config in a `.keras` archive
MAX_ARCHIVE_CONFIG_BYTES = 2**24  # a Transformer's takes a few kB
CHECKPOINT_DIR = "checkpoints"
BEST_CHECKPOINT = "best.weights.h5"
WEIGHTS_SUFFIX = ".weights.h5"
# The fields of `config.json` that the model is rebuilt from.
MODEL_FIELDS = ("preset", "model_overrides")
# The beam search of runs whose config.json predates its `beam_size` and `alpha` fields.
DEFAULT_BEAM_SIZE = 4
DEFAULT_ALPHA = 0.6
# The widest beam a folder's file may ask for (a wider one is still given as an argument).
MAX_RECORDED_BEAM_SIZE = 1024


def is_run_folder(path: str | os.PathLike) -> bool:
    """Whether `path` is a folder whose `config.json` holds a run's settings (its `preset`).

    A `config.json` that cannot be read as a JSON object does not make a run folder; a
    folder whose `config.json` has a `preset` field does, whatever else it lacks (loading it
    then names what is missing).
    """
    path = Path(path) / CONFIG_FILE
    if not path.is_file():
        return False
    try:
        return "preset" in read_json_object(path)
    except (OSError, ValueError):
        return False


def read_run_config(run_dir: str | os.PathLike) -> dict:
    """The settings of a run (its `config.json`, a `TrainConfig` as JSON).

    Args:
        run_dir: a folder written by `tools/train.py`.

    Returns:
        The settings as a dict.

    Raises:
        FileNotFoundError: if `config.json` is missing (naming it).
        ValueError: naming it if it is corrupt (not valid UTF-8 JSON, or not a JSON object)
            or lacks a field the model needs.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no run config at {path}; is {run_dir} a run of tools/train.py?")
    config = read_json_object(path)
    missing = [name for name in MODEL_FIELDS if name not in config]
    if missing:
        raise CorruptFileError(f"{path} lacks the field(s) {', '.join(missing)}")
    if not isinstance(config["model_overrides"], dict | None):
        raise CorruptFileError(
            f"model_overrides in {path} must be an object; got {config['model_overrides']!r}"
        )
    return config


def run_beam_search(run_dir: str | os.PathLike) -> tuple[int, float]:
    """The beam width and length-penalty exponent a run decodes with.

    They are `config.json`'s `beam_size` and `alpha` (the dataset's, e.g. 5 and 1.0 for
    Multi30k); runs that predate those fields, or folders without `config.json` (a model
    copied with its tokenizer), get `DEFAULT_BEAM_SIZE` and `DEFAULT_ALPHA` (4 and 0.6).

    Args:
        run_dir: a folder written by `tools/train.py`.

    Returns:
        `(beam_size, alpha)`.

    Raises:
        ValueError: naming `config.json` if it is corrupt or holds an invalid value.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        return DEFAULT_BEAM_SIZE, DEFAULT_ALPHA
    return search_settings(read_run_config(run_dir), path)


def search_settings(recorded: dict, path: Path) -> tuple[int, float]:
    """`(beam_size, alpha)` from a run's `config.json` or a preset's `metadata.json`
    (`recorded`, read from `path`), the defaults where it records none; a recorded
    `beam_size` is at most `MAX_RECORDED_BEAM_SIZE`.

    Raises:
        ValueError: naming `path` if a value is invalid.
    """
    beam_size, alpha = recorded.get("beam_size"), recorded.get("alpha")
    beam_size = DEFAULT_BEAM_SIZE if beam_size is None else beam_size
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise CorruptFileError(f"beam_size in {path} must be an integer >= 1; got {beam_size!r}")
    if beam_size > MAX_RECORDED_BEAM_SIZE:  # a search's memory grows with it
        raise CorruptFileError(
            f"beam_size in {path} must be at most {MAX_RECORDED_BEAM_SIZE}; got {beam_size!r}"
        )
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or alpha < 0:
        raise CorruptFileError(f"alpha in {path} must be a number >= 0; got {alpha!r}")
    return beam_size, float(alpha)


class TokenizerRecord(typing.TypedDict, total=False):
    """`tokenizer.json`, beside a run's tokenizer: its languages, size and case, and the
    size and SHA-256 of its files (`files`, by name: `tokenizer.model` and its recaser;
    runs written before it lack it)."""

    source_language: str | None
    target_language: str | None
    vocabulary_size: int
    lowercase: bool
    model_type: str
    files: dict[str, FileDigest]


def tokenizer_file_digests(run_dir: str | os.PathLike) -> dict[str, dict]:
    """The `FileDigest`s of a run's tokenizer files (`tokenizer.json`'s `files`)."""
    files = {name: Path(run_dir) / name for name in TOKENIZER_FILES}
    return {name: file_digest(path) for name, path in files.items() if path.is_file()}


def check_tokenizer_files(run_dir: str | os.PathLike) -> None:
    """Checks a run's tokenizer files against the digests its `tokenizer.json` records, if
    it records any: a file cut short at a line's end, or another run's, still parses.

    Raises:
        CorruptFileError: naming `tokenizer.json` if it is corrupt, or the tokenizer file
            that is not the one it records.
        FileNotFoundError: naming a recorded file that is missing.
    """
    record_path = Path(run_dir) / TOKENIZER_RECORD
    if not record_path.is_file():
        return
    recorded = read_json_record(record_path, TokenizerRecord).get("files", {})
    unknown = sorted(set(recorded) - set(TOKENIZER_FILES))
    if unknown:
        raise CorruptFileError(
            f"{record_path} is corrupt: it records an unknown file {unknown[0]!r}"
        )
    present = {name for name in TOKENIZER_FILES if (Path(run_dir) / name).is_file()}
    extra = sorted(present - set(recorded)) if recorded else []
    if extra:
        raise CorruptFileError(
            f"{Path(run_dir) / extra[0]} is not the run's: {record_path} records no such file"
        )
    for name, digest in recorded.items():
        check_file_digest(Path(run_dir) / name, digest, record_path)


def load_run_tokenizer(run_dir: str | os.PathLike) -> "SubwordTokenizer":
    """The tokenizer of a run (`tokenizer.model`, checked against `tokenizer.json`:
    `check_tokenizer_files`); loads TensorFlow (tensorflow-text).

    Raises:
        FileNotFoundError: if the file is missing (naming it).
        ValueError: naming it if it is corrupt (not a SentencePiece model of this library,
            or not the file `tokenizer.json` records), or naming its recaser file or
            `tokenizer.json` if they are.
    """
    check_tokenizer_files(run_dir)
    return load_tokenizer_file(Path(run_dir) / TOKENIZER_FILE)


def load_tokenizer_file(path: Path) -> "SubwordTokenizer":
    """The tokenizer saved at `path` (and its recaser beside it).

    Raises:
        FileNotFoundError: naming `path` if it is missing.
        CorruptFileError: naming it if it is corrupt (not a SentencePiece model of this
            library), or naming its recaser file if that is.
    """
    from keras_attention.data.tokenizer import SubwordTokenizer

    return SubwordTokenizer.load(path)


def check_tokenizer_fits(
    tokenizer_path: str | os.PathLike, vocabulary_size: int, expected: int | None, owner: str
) -> None:
    """Checks that the tokenizer read from `tokenizer_path`, of `vocabulary_size` subwords,
    is the one of `owner` (a model, or a run's `config.json`), which expects `expected`
    (`None`: not known). Another run's tokenizer, or a damaged one that still parses, would
    translate into garbage or fail deep in the search.

    Raises:
        CorruptFileError: naming `tokenizer_path`, `owner` and both sizes if they differ.
    """
    if expected is not None and vocabulary_size != expected:
        raise CorruptFileError(
            f"{tokenizer_path} does not fit {owner}: its vocabulary has {vocabulary_size} "
            f"subwords, where {owner} has {expected} (the tokenizer of another run, or a "
            "damaged file)"
        )


def run_vocabulary_size(run_dir: str | os.PathLike) -> int:
    """The size of a run's vocabulary, read from `tokenizer.model` without TensorFlow.

    Raises:
        FileNotFoundError: if the file is missing (naming it).
        ValueError: naming it if it is corrupt (not a SentencePiece model).
    """
    import sentencepiece

    path = Path(run_dir) / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no tokenizer at {path}")
    try:
        return sentencepiece.SentencePieceProcessor(model_proto=path.read_bytes()).get_piece_size()
    except RuntimeError as error:
        raise CorruptFileError(
            f"{path} is corrupt or not a SentencePiece model: {error}"
        ) from error


@contextlib.contextmanager
def _float32_policy() -> Iterator[None]:
    """Sets the float32 dtype policy for the block, then restores the previous one."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def build_run_model(
    model_class: type[keras.Model],
    run_dir: str | os.PathLike,
    tokenizer: "SubwordTokenizer | None" = None,
    weights_path: str | os.PathLike | None = None,
) -> keras.Model:
    """A freshly initialized, built model of a run's architecture.

    The architecture is `config.json`'s preset and model overrides, with the tokenizer's
    vocabulary size, as `train_translator` builds it. The model uses the float32 policy even
    for a mixed-precision run: its checkpoints hold float32 variables all the same.

    Args:
        model_class: the model's class (`Transformer`), called with the vocabulary size
            and the preset's arguments (`preset_config(preset, **model_overrides)`).
        run_dir: a folder written by `tools/train.py`.
        tokenizer: the run's tokenizer, if already loaded (default: the vocabulary size is
            read from `tokenizer.model`, without TensorFlow).
        weights_path: the weights file the model is for, if any: before the model is made,
            the file must be large enough for the sizes `config.json` gives
            (`model_sizes.check_model_config`).

    Returns:
        The built model (random weights).

    Raises:
        FileNotFoundError: naming a missing `config.json`, `tokenizer.model` or
            `weights_path`.
        ValueError: naming `config.json` if it is corrupt, lacks a field or describes no
            valid model (e.g. an unknown preset, or a size out of `model_sizes`' limits), or
            naming `tokenizer.model` if its vocabulary is not `config.json`'s
            `vocabulary_size`, or `weights_path` if it is too small for the model.
    """
    config = read_run_config(run_dir)
    if tokenizer is None:
        vocabulary_size = run_vocabulary_size(run_dir)
    else:
        vocabulary_size = tokenizer.vocabulary_size
    path = Path(run_dir) / CONFIG_FILE
    saved_size = config.get("vocabulary_size")
    if isinstance(saved_size, int) and not isinstance(saved_size, bool):
        tokenizer_path = Path(run_dir) / TOKENIZER_FILE
        owner = f"{path} (vocabulary_size)"
        check_tokenizer_fits(tokenizer_path, vocabulary_size, saved_size, owner)
    with _float32_policy():
        try:
            arguments = preset_config(config["preset"], **(config["model_overrides"] or {}))
        except (TypeError, ValueError) as error:
            raise CorruptFileError(f"{path} does not describe a valid model: {error}") from error
        # Its sizes, before the model is made (issue 53).
        check_model_config({**arguments, "vocabulary_size": vocabulary_size}, path, weights_path)
        try:
            model = model_class(vocabulary_size=vocabulary_size, **arguments)
        except (TypeError, ValueError) as error:
            raise CorruptFileError(f"{path} does not describe a valid model: {error}") from error
        model.build()
    return model


def epoch_checkpoint(run_dir: str | os.PathLike, epoch: int) -> Path:
    """The path of epoch `epoch`'s checkpoint, `checkpoints/epoch_NNN.weights.h5`.

    Raises:
        ValueError: if `epoch` < 1.
    """
    if epoch < 1:
        raise ValueError(f"epoch numbers start at 1; got epoch={epoch}")
    return Path(run_dir) / CHECKPOINT_DIR / f"epoch_{epoch:03d}{WEIGHTS_SUFFIX}"


def _last_checkpoint(run_dir: str | os.PathLike) -> Path:
    folder = Path(run_dir) / CHECKPOINT_DIR
    try:
        return last_checkpoints(folder, 1)[0]
    except (OSError, ValueError) as error:
        raise FileNotFoundError(f"no epoch_NNN{WEIGHTS_SUFFIX} checkpoint in {folder}") from error


def resolve_checkpoint(run_dir: str | os.PathLike, checkpoint: str | os.PathLike) -> Path:
    """The file a checkpoint name stands for.

    Args:
        run_dir: a folder written by `tools/train.py`.
        checkpoint: `"last"` (the highest-numbered `checkpoints/epoch_NNN.weights.h5`),
            `"best"` (`checkpoints/best.weights.h5`), a bare file name in
            `run_dir/checkpoints/` (`"epoch_012.weights.h5"`), or a path with a folder part
            (relative to the working directory, or absolute).

    Returns:
        The path of an existing file.

    Raises:
        FileNotFoundError: naming the file (or folder, for `"last"`) that is missing.
        IsADirectoryError: naming `checkpoint` if it is a folder.
    """
    folder = Path(run_dir) / CHECKPOINT_DIR
    if checkpoint == "last":
        return _last_checkpoint(run_dir)
    if checkpoint == "best":
        path = folder / BEST_CHECKPOINT
    elif Path(checkpoint).name == str(checkpoint):
        path = folder / checkpoint
    else:
        path = Path(checkpoint)
    if path.is_dir():
        raise IsADirectoryError(f"checkpoint {path} is a folder; expected a .weights.h5 file")
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint file {path}")
    return path


def is_weights_file(path: str | os.PathLike) -> bool:
    """Whether `path` names a weights-only file (`.weights.h5`) rather than a `.keras` one."""
    return str(path).endswith(WEIGHTS_SUFFIX)


def locate_run_model(
    run_dir: str | os.PathLike,
    model_file: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
) -> Path:
    """The file `load_run_model` reads for these arguments (see there).

    Raises:
        ValueError: if both `model_file` and `checkpoint` are given.
        FileNotFoundError: naming the missing file.
    """
    if model_file is not None and checkpoint is not None:
        raise ValueError(
            f"give model_file or checkpoint, not both; got model_file={model_file!r}, "
            f"checkpoint={checkpoint!r}"
        )
    if checkpoint is not None:
        return resolve_checkpoint(run_dir, checkpoint)
    if model_file is not None:
        path = Path(run_dir) / model_file
        if not path.is_file():
            raise FileNotFoundError(f"no model at {path}; train one with tools/train.py")
        return path
    path = Path(run_dir) / MODEL_FILE
    if path.is_file():
        return path
    try:
        return _last_checkpoint(run_dir)
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"no model at {path} and {error}; train one with tools/train.py"
        ) from error


def load_checkpoint(
    model_class: type[keras.Model],
    run_dir: str | os.PathLike,
    path: str | os.PathLike,
    tokenizer: "SubwordTokenizer | None" = None,
) -> keras.Model:
    """The run's model rebuilt from `config.json`, holding the weights of `path`.

    Args:
        model_class: the model's class (`Transformer`).
        run_dir: a folder written by `tools/train.py`.
        path: a `.weights.h5` file saved from the run's model.
        tokenizer: the run's tokenizer, if already loaded.

    Returns:
        The model.

    Raises:
        FileNotFoundError: naming a missing file.
        ValueError: naming the checkpoint if it is corrupt or does not hold exactly the
            model's weights, or naming `config.json` (see `build_run_model`).
    """
    model = build_run_model(model_class, run_dir, tokenizer, weights_path=path)
    check_layouts(model, [path])
    load_weights_file(model, path)
    return model


def check_model_file(path: str | os.PathLike) -> None:
    """Checks that `path` is a whole `.keras` archive: a zip file whose every member reads
    back with its checksum (a truncated or overwritten file does not).

    Raises:
        FileNotFoundError: naming `path` if it does not exist.
        CorruptFileError: naming `path` and calling it corrupt if it is not.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no model file {path}")
    problem = "not a .keras archive"
    try:
        if zipfile.is_zipfile(path):  # Keras says "File not found" for the others
            with zipfile.ZipFile(path) as archive:
                damaged = archive.testzip()
            if damaged is None:
                return
            problem = f"its member {damaged} is damaged"
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as error:
        problem = f"{problem}: {error}"
    raise CorruptFileError(f"{path} is corrupt or not a Keras model file ({problem})")


def read_archive_config(path: str | os.PathLike) -> dict:
    """The `config.json` of a `.keras` archive (checked whole by `check_model_file`), read
    without loading the model.

    Raises:
        CorruptFileError: naming `path` if the archive has no `config.json` or it is not a
            JSON object.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            size = archive.getinfo(ARCHIVE_CONFIG).file_size
            if size > MAX_ARCHIVE_CONFIG_BYTES:  # not read into memory
                raise ValueError(f"{size:,} bytes, more than a model's config holds")
            data = archive.read(ARCHIVE_CONFIG)
        config = json.loads(data.decode("utf-8"))
    except (zipfile.BadZipFile, KeyError, OSError, UnicodeDecodeError, ValueError) as error:
        raise CorruptFileError(
            f"{path} is corrupt or not a Keras model file (its {ARCHIVE_CONFIG}: {error})"
        ) from error
    if not isinstance(config, dict):
        raise CorruptFileError(f"{path} is corrupt: its {ARCHIVE_CONFIG} is not a JSON object")
    return config


def load_model_file(path: str | os.PathLike) -> keras.Model:
    """`keras.models.load_model(path)`, with errors that name the file.

    The archive's `config.json` is read first: a model whose sizes are out of limits, or
    more than its weights can hold, is refused before it is made
    (`model_sizes.check_model_config`). The model is loaded in Keras' safe mode (no lambda
    is deserialized).

    Args:
        path: a `.keras` file saved from a model of this library.

    Returns:
        The model.

    Raises:
        FileNotFoundError: naming `path` if it does not exist.
        ValueError: naming `path` and calling it corrupt if it is not a readable `.keras`
            archive (e.g. truncated) or does not hold a model of this library, or naming it
            and the size at fault.
    """
    path = Path(path)
    check_model_file(path)
    config = read_archive_config(path)
    if isinstance(config.get("config"), dict):  # its sizes, before the model is made
        check_model_config(config["config"], f"{path} ({ARCHIVE_CONFIG})", path)
    # Keras and h5py raise these for damaged archive members; nothing else reads the file.
    try:
        # Safe mode: no Python code (a lambda) is deserialized from the file.
        return keras.models.load_model(path, safe_mode=True)
    except (zipfile.BadZipFile, OSError, RuntimeError, KeyError, ValueError) as error:
        raise CorruptFileError(
            f"{path} is corrupt or not a Keras model of this library: {error}"
        ) from error


def load_run_model(
    model_class: type[keras.Model],
    run_dir: str | os.PathLike,
    model_file: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    tokenizer: "SubwordTokenizer | None" = None,
) -> keras.Model:
    """The model of a run folder, finished or still training.

    With neither `model_file` nor `checkpoint`: `model.keras` if the run has finished, else
    its last epoch checkpoint (`locate_run_model` tells which).

    Args:
        model_class: the model's class (`Transformer`), to rebuild a checkpoint's model.
        run_dir: a folder written by `tools/train.py`.
        model_file: a model file in `run_dir` (or an absolute path), e.g. `"averaged.keras"`,
            read with `keras.models.load_model`; a `.weights.h5` file is loaded as a
            checkpoint.
        checkpoint: weights to load into the model rebuilt from `config.json`: `"last"`,
            `"best"`, a file name in `run_dir/checkpoints/` or a path (see
            `resolve_checkpoint`).
        tokenizer: the run's tokenizer, if already loaded (only a checkpoint's model needs
            its vocabulary size, read from `tokenizer.model` otherwise).

    Returns:
        The model.

    Raises:
        ValueError: if both `model_file` and `checkpoint` are given, or naming a file that
            is corrupt or does not match the run's architecture.
        FileNotFoundError: naming the missing file.
    """
    path = locate_run_model(run_dir, model_file, checkpoint)
    return load_located_model(model_class, run_dir, path, tokenizer)


def load_located_model(
    model_class: type[keras.Model],
    run_dir: str | os.PathLike,
    path: str | os.PathLike,
    tokenizer: "SubwordTokenizer | None" = None,
) -> keras.Model:
    """The model in `path`, a file `locate_run_model` gave: a `.weights.h5` checkpoint is
    loaded into the model rebuilt from the run's `config.json` (`load_checkpoint`), any other
    file with `keras.models.load_model` (`load_model_file`); the model must fit `tokenizer`
    (the run's, if given: `check_tokenizer_fits`).

    Raises:
        FileNotFoundError: naming the missing file.
        ValueError: naming a file that is corrupt or does not match the run's architecture,
            or the run's `tokenizer.model` if it does not fit the model.
    """
    if is_weights_file(path):
        return load_checkpoint(model_class, run_dir, path, tokenizer)
    model = load_model_file(path)
    if tokenizer is not None:
        size = getattr(model, "vocabulary_size", None)
        tokenizer_path = Path(run_dir) / TOKENIZER_FILE
        check_tokenizer_fits(tokenizer_path, tokenizer.vocabulary_size, size, f"the model {path}")
    return model
