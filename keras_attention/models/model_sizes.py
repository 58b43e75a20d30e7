"""The sizes of a `Transformer`, checked before anything is built (issue 53).

A model folder from elsewhere (a preset folder, a run folder, a `.keras` file) is data: its
`config.json` says how large the model is, and a `Transformer` built from it allocates what
it says. A `vocabulary_size` of 10**12 would allocate until the process runs out of memory,
a `num_encoder_layers` of 10**9 would build blocks until it is killed. So every size is
checked twice before a weight is made:

- against sane limits (`SIZE_LIMITS`, `MAX_PARAMETERS`), by the `Transformer`'s constructor
  itself (`check_sizes`, `check_parameter_count`): a positive integer (not a bool, a float or
  a string) no larger than its limit, whoever gives it (a file, `tools/train.py`'s
  `--override`, a program);
- against the weights file the folder holds, by the loaders (`check_weights_fit`): the
  parameters the config describes (`parameter_count`) must fit in the file's bytes, at
  `SMALLEST_PARAMETER_BYTES` a parameter (int4 kernels). The weights are then checked
  exactly, name by name and shape by shape, once the model is built
  (`keras_attention.training.checkpoints.check_layouts`); this first check only keeps a
  config that claims far more than its weights from allocating it.

The limits read the module's constants when they run: a program that needs a larger model
may raise them (`model_sizes.MAX_PARAMETERS = ...`).
"""

import math
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

from keras_attention.core.checks import is_integer
from keras_attention.core.file_checks import CorruptFileError

# The largest value of each size argument of `Transformer`. Far above any published
# translation model (the paper's big model: d_model 1024, d_ff 4096, 6 + 6 layers, a 37k
# vocabulary), far below what makes a machine run out of memory on one argument alone.
SIZE_LIMITS = {
    "vocabulary_size": 2**24,
    "target_vocabulary_size": 2**24,
    "num_encoder_layers": 1024,
    "num_decoder_layers": 1024,
    "d_model": 2**16,
    "num_heads": 1024,
    "intermediate_dim": 2**18,
    "key_dim": 2**16,
    "max_positions": 2**20,
}
# The size arguments that may be `None` (a default that follows from the others).
OPTIONAL_SIZES = ("target_vocabulary_size", "key_dim", "max_positions")
# The most parameters a model may have: 40 GB of float32 weights, 47 times the paper's big
# model; more than this library is ever tested with.
MAX_PARAMETERS = 10**10
# The fewest bytes a parameter takes in a weights file: half a byte (int4 kernels, two a
# byte); float32 weights take 4.
SMALLEST_PARAMETER_BYTES = 0.5
# The member of a `.keras` archive that holds the weights.
ARCHIVE_WEIGHTS = "model.weights.h5"


def check_size(name: str, value: object, where: str | None = None) -> None:
    """Raises `ValueError` unless `value` is a valid value of the size argument `name`: an
    integer from 1 to `SIZE_LIMITS[name]` (or `None` for one of `OPTIONAL_SIZES`).

    Args:
        name: a key of `SIZE_LIMITS`, e.g. `"num_encoder_layers"`.
        value: its value, as given.
        where: what gave it, for the message (a file, `"model_overrides"`).

    Raises:
        ValueError: naming `where`, `name` and `value`.

    Example:

    >>> check_size("num_encoder_layers", 10**9, "config.json")
    Traceback (most recent call last):
    ...
    ValueError: config.json: num_encoder_layers must be an integer from 1 to 1024; got num_encoder_layers=1000000000
    """  # noqa: E501
    if value is None and name in OPTIONAL_SIZES:
        return
    limit = SIZE_LIMITS[name]
    if not is_integer(value) or not 1 <= value <= limit:
        prefix = f"{where}: " if where else ""
        raise ValueError(
            f"{prefix}{name} must be an integer from 1 to {limit}; got {name}={value!r}"
        )


def check_sizes(arguments: Mapping[str, object], where: str | None = None) -> None:
    """Checks every size argument among `arguments` (`check_size`); the others are left to
    the model.

    Args:
        arguments: constructor arguments of a `Transformer` (some or all).
        where: what gave them, for the message.

    Raises:
        ValueError: naming `where` and the first size that is not valid.
    """
    for name in SIZE_LIMITS:
        if name in arguments:
            check_size(name, arguments[name], where)


def parameter_count(config: Mapping[str, object]) -> int:
    """The parameters of the `Transformer` that `config` describes, without building it:
    `model.count_params()` once built (a float model, without LoRA kernels).

    Args:
        config: its constructor arguments, with every size (its `get_config()`); those of
            `OPTIONAL_SIZES` and the booleans may be left out for their defaults.

    Returns:
        The number of parameters.

    Raises:
        KeyError: naming a required size that `config` lacks.

    Example:

    >>> sizes = dict(vocabulary_size=1000, num_encoder_layers=6, num_decoder_layers=6,
    ...              d_model=512, num_heads=8, intermediate_dim=2048)
    >>> parameter_count(sizes)
    44650496
    """
    d_model = int(config["d_model"])
    num_heads = int(config["num_heads"])
    key_dim = config.get("key_dim")
    heads_width = num_heads * int(key_dim if key_dim is not None else d_model // num_heads)
    inner = int(config["intermediate_dim"])
    vocabulary = int(config["vocabulary_size"])
    output_vocabulary = int(config.get("target_vocabulary_size") or vocabulary)
    positions = int(config.get("max_positions") or 0)
    embeddings = (output_vocabulary + positions) * d_model
    if not config.get("tie_output_embeddings", True):
        embeddings += output_vocabulary * d_model
    if not config.get("share_embeddings", True):
        embeddings += (vocabulary + positions) * d_model
    # Query, key and value projections with biases, the output projection with its bias.
    attention = 3 * (d_model + 1) * heads_width + (heads_width + 1) * d_model
    feed_forward = (d_model + 1) * inner + (inner + 1) * d_model
    norm = 2 * d_model
    final_norm = norm if config.get("norm_first", False) else 0
    encoder = int(config["num_encoder_layers"]) * (attention + feed_forward + 2 * norm)
    decoder = int(config["num_decoder_layers"]) * (2 * attention + feed_forward + 3 * norm)
    return embeddings + encoder + decoder + 2 * final_norm


def check_parameter_count(config: Mapping[str, object], where: str | None = None) -> None:
    """Raises `ValueError` if the model `config` describes has more than `MAX_PARAMETERS`
    parameters (`parameter_count`); its sizes must have passed `check_sizes`.

    Args:
        config: the model's constructor arguments, with every size.
        where: what gave them, for the message.

    Raises:
        ValueError: naming `where`, the count and the sizes.
    """
    count = parameter_count(config)
    if count > MAX_PARAMETERS:
        prefix = f"{where}: " if where else ""
        raise ValueError(
            f"{prefix}the model would have {count:,} parameters, more than the "
            f"{MAX_PARAMETERS:,} this library builds ({describe_sizes(config)})"
        )


def describe_sizes(config: Mapping[str, object]) -> str:
    """The size arguments of `config` that are set, as `name=value, ...`."""
    return ", ".join(
        f"{name}={config[name]}" for name in SIZE_LIMITS if config.get(name) is not None
    )


def weights_bytes_on_disk(path: str | os.PathLike) -> int:
    """The bytes of the weights in `path`: the size of a `.weights.h5` file, or of the
    `model.weights.h5` member of a `.keras` archive (as its directory records it; the
    archive's checksums are checked before it is loaded, `run_folder.check_model_file`).

    Raises:
        FileNotFoundError: naming `path` if it does not exist.
        CorruptFileError: naming a `.keras` archive that is not a zip file or has no
            `model.weights.h5`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no weights file {path}")
    if not zipfile.is_zipfile(path):
        return path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.getinfo(ARCHIVE_WEIGHTS).file_size
    except (zipfile.BadZipFile, KeyError, OSError) as error:
        raise CorruptFileError(
            f"{path} is corrupt or not a Keras model file (no readable {ARCHIVE_WEIGHTS}: {error})"
        ) from error


def check_weights_fit(
    config: Mapping[str, object], weights_path: str | os.PathLike, config_path: str
) -> None:
    """Checks, before a model is built, that the weights file it is to be loaded from can
    hold the model that `config` describes: `parameter_count(config)` parameters take at
    least `SMALLEST_PARAMETER_BYTES` each.

    Args:
        config: the model's constructor arguments, with every size (an unbuilt model's
            `get_config()`).
        weights_path: its weights: a `.weights.h5` file or a `.keras` archive.
        config_path: where `config` was read, for the message.

    Raises:
        CorruptFileError: naming `weights_path`, `config_path` and its sizes if the file is
            too small for them.
        FileNotFoundError: naming `weights_path` if it does not exist.
    """
    count = parameter_count(config)
    size = weights_bytes_on_disk(weights_path)
    if count * SMALLEST_PARAMETER_BYTES > size:
        needed = math.ceil(count * SMALLEST_PARAMETER_BYTES)
        raise CorruptFileError(
            f"{weights_path} is too small for the model that {config_path} describes: "
            f"{size:,} bytes cannot hold its {count:,} parameters ({describe_sizes(config)}; "
            f"at least {needed:,} bytes); the file is corrupt (cut short) or another "
            "model's, or a size in the config is wrong"
        )


# The sizes `parameter_count` cannot do without.
REQUIRED_SIZES = (
    "vocabulary_size", "num_encoder_layers", "num_decoder_layers", "d_model", "num_heads",
    "intermediate_dim",
)  # fmt: skip


def check_model_config(
    config: Mapping[str, object],
    where: str | os.PathLike,
    weights_path: str | os.PathLike | None = None,
) -> None:
    """Checks the sizes of a model read from a file before it is made: each size
    (`check_sizes`), the parameter count (`check_parameter_count`) and, where the weights
    file is given, that it can hold them (`check_weights_fit`). A config without the sizes
    of a `Transformer` is left to its model (and `check_layouts`).

    Args:
        config: the model's constructor arguments as read (a preset's or a `.keras`
            archive's `config.json` `config`, a run's preset with its `model_overrides`).
        where: the file they were read from, for the messages.
        weights_path: the weights the model is to be loaded from, if any.

    Raises:
        ValueError: naming `where` and the size at fault.
        CorruptFileError: naming both files if the weights file is too small for the model.
        FileNotFoundError: naming `weights_path` if it does not exist.

    Example:

    >>> config = dict(vocabulary_size=10**12, num_encoder_layers=6, num_decoder_layers=6,
    ...               d_model=512, num_heads=8, intermediate_dim=2048)
    >>> check_model_config(config, "presets/en-de/config.json")
    Traceback (most recent call last):
    ...
    ValueError: presets/en-de/config.json: vocabulary_size must be an integer from 1 to 16777216; got vocabulary_size=1000000000000
    """  # noqa: E501
    check_sizes(config, str(where))
    if not all(is_integer(config.get(name)) for name in REQUIRED_SIZES):
        return
    check_parameter_count(config, str(where))
    if weights_path is not None:
        check_weights_fit(config, weights_path, str(where))
