"""Checking the files the library reads back: a damaged one is named, with what is wrong.

A file of a run folder or an export can be truncated, overwritten with other bytes, edited by
hand or written by another version. Its reader raises `CorruptFileError` (a `ValueError`)
whose message starts with the file's path, instead of a traceback from deep inside a
parser, a silently wrong value, or a `TypeError` later on.

JSON files are read with `read_json_object` and their fields checked against type
annotations with `check_json_fields`: the annotations of a dataclass (`TrainConfig`) or of a
`TypedDict` describing a record (`bleu.json`, a backup's metadata), checked generally, not
field by field by hand. The JSON types map to Python's as `json` reads them: `int` (not
`bool`), `float` (an `int` too), `str`, `bool`, `None` (`null`), `list[...]`, `dict[...]` and
`TypedDict`s (objects with the keys they name).
"""

import hashlib
import json
import os
import types
import typing
from collections.abc import Collection, Mapping
from pathlib import Path

__all__ = [
    "CorruptFileError",
    "FileDigest",
    "check_file_digest",
    "check_json_fields",
    "describe_type",
    "file_digest",
    "read_json_object",
    "read_json_record",
]


class CorruptFileError(ValueError):
    """A file the library reads back is damaged: truncated, not of its format, or holding
    fields of the wrong type. The message names the file and what is wrong with it."""


def read_json_object(path: str | os.PathLike) -> dict:
    """The JSON object in the file `path`, with errors that name it.

    Raises:
        FileNotFoundError: naming `path` if it is missing.
        CorruptFileError: naming `path` if it is not valid UTF-8 JSON or does not hold a
            JSON object.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no {path.name} at {path}")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptFileError(f"{path} is corrupt: not valid JSON ({error})") from error
    if not isinstance(value, dict):
        raise CorruptFileError(
            f"{path} is corrupt: it must hold a JSON object; got {type(value).__name__}"
        )
    return value


def _is_typed_dict(annotation: object) -> bool:
    return (
        isinstance(annotation, type)
        and issubclass(annotation, dict)
        and hasattr(annotation, "__required_keys__")
    )


def _arms(annotation: object) -> tuple:
    """The alternatives of a union (`int | None`), or `(annotation,)`."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return typing.get_args(annotation)
    return (annotation,)


def _matches(value: object, annotation: object) -> bool:
    """Whether the JSON value `value` is of the type `annotation` (see the module)."""
    if len(_arms(annotation)) > 1:
        return any(_matches(value, arm) for arm in _arms(annotation))
    if annotation in (None, type(None)):
        return value is None
    if annotation is typing.Any:
        return True
    if annotation is bool:
        return isinstance(value, bool)
    if annotation in (int, float):
        allowed = int if annotation is int else (int, float)
        return isinstance(value, allowed) and not isinstance(value, bool)
    if _is_typed_dict(annotation):
        return isinstance(value, dict) and _typed_dict_problem(value, annotation) is None
    origin, arguments = typing.get_origin(annotation) or annotation, typing.get_args(annotation)
    if origin is list:
        return isinstance(value, list) and all(
            _matches(item, arguments[0]) for item in value if arguments
        )
    if origin is dict:
        return isinstance(value, dict) and all(
            _matches(key, arguments[0]) and _matches(item, arguments[1])
            for key, item in value.items()
            if arguments
        )
    return isinstance(value, origin)


_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
_PLURALS = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}


def describe_type(annotation: object, plural: bool = False) -> str:
    """`annotation` in words, as JSON calls it: `list[int] | None` -> "a list of integers or
    null"."""
    arms = _arms(annotation)
    if len(arms) > 1:
        return " or ".join(describe_type(arm, plural) for arm in arms)
    if annotation in (None, type(None)):
        return "null"
    if annotation in _NAMES:
        return (_PLURALS if plural else _NAMES)[annotation]
    if _is_typed_dict(annotation):
        keys = ", ".join(sorted(annotation.__required_keys__))
        return f"objects with {keys}" if plural else f"an object with {keys}"
    origin, arguments = typing.get_origin(annotation) or annotation, typing.get_args(annotation)
    if origin is list:
        inner = f" of {describe_type(arguments[0], True)}" if arguments else ""
        return f"lists{inner}" if plural else f"a list{inner}"
    if origin is dict:
        inner = f" of {describe_type(arguments[1], True)}" if arguments else ""
        return f"objects{inner}" if plural else f"an object{inner}"
    return "values" if plural else "a value"


def _typed_dict_problem(value: dict, record: type) -> str | None:
    """What is wrong with `value` as a `record` (a `TypedDict`), `None` if nothing is."""
    hints = typing.get_type_hints(record)
    missing = sorted(record.__required_keys__ - value.keys())
    if missing:
        return f"it lacks the field {missing[0]!r}"
    for name, annotation in hints.items():
        if name in value and not _matches(value[name], annotation):
            return f"{name} must be {describe_type(annotation)}; got {value[name]!r}"
    return None


def check_json_fields(
    values: Mapping,
    fields: Mapping[str, object],
    path: str | os.PathLike,
    required: Collection[str] = (),
    allow_unknown: bool = True,
) -> None:
    """Checks the fields of a JSON object read from `path` against type annotations.

    Args:
        values: the object, as `json` read it.
        fields: the type of each known field (`typing.get_type_hints` of a dataclass or a
            `TypedDict`).
        path: the file, for the messages.
        required: the fields that must be there.
        allow_unknown: whether fields not in `fields` may be there (a record that a newer
            version may extend) or not (settings this version does not know).

    Raises:
        CorruptFileError: naming `path` and the first field that is missing, unknown or of
            another type, with its value.
    """
    missing = [name for name in required if name not in values]
    if missing:
        raise CorruptFileError(f"{path} is corrupt: it lacks the field {missing[0]!r}")
    unknown = sorted(set(values) - set(fields))
    if unknown and not allow_unknown:
        raise CorruptFileError(
            f"{path} is corrupt or from another version: unknown field {unknown[0]!r}"
        )
    for name, annotation in fields.items():
        if name not in values or _matches(values[name], annotation):
            continue
        detail = ""
        if _is_typed_dict(annotation) and isinstance(values[name], dict):
            detail = f" ({_typed_dict_problem(values[name], annotation)})"
        raise CorruptFileError(
            f"{name} in {path} must be {describe_type(annotation)}; got "
            f"{_shown(values[name])}{detail}: the file is corrupt"
        )


def read_json_record(path: str | os.PathLike, record: type) -> dict:
    """The JSON object in the file `path`, checked against `record`, a `TypedDict`: its
    required keys there, every field it names of its type (others are let through).

    Raises:
        FileNotFoundError: naming `path` if it is missing.
        CorruptFileError: naming `path` if it is not a JSON object or not such a record.
    """
    values = read_json_object(path)
    hints = typing.get_type_hints(record)
    check_json_fields(values, hints, path, sorted(record.__required_keys__))
    return values


def _shown(value: object) -> str:
    """`repr(value)`, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class FileDigest(typing.TypedDict):
    """A file's size and SHA-256 (`file_digest`), recorded beside it to find a file cut
    short or changed where its format cannot tell (a text file cut at a line's end)."""

    bytes: int
    sha256: str


def file_digest(path: str | os.PathLike) -> dict:
    """The `FileDigest` of the file `path` (read whole)."""
    data = Path(path).read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def check_file_digest(path: str | os.PathLike, recorded: dict, record: str | os.PathLike) -> None:
    """Checks that the file `path` is the one whose `FileDigest` the file `record` holds.

    Raises:
        FileNotFoundError: naming `path` if it is missing.
        CorruptFileError: naming `path` and `record` if its size or digest differs.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no {path.name} at {path} (which {record} records)")
    found = file_digest(path)
    if found != recorded:
        raise CorruptFileError(
            f"{path} is corrupt: it is not the file {record} records ({found['bytes']} bytes "
            f"instead of {recorded['bytes']}, or another SHA-256): changed or damaged since "
            "it was written"
        )
