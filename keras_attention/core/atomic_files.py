"""Writing files so that a reader, or a run killed half-way, never sees a partial one.

Every writer here produces the new content under a temporary name in the destination's
folder, then renames it over the destination (`os.replace`, atomic on POSIX and Windows): the
file is either the old one or the complete new one, never a prefix of it. The temporary
names start with `.<destination name>.`, so that a run resumed after a kill can find and
remove the ones a kill left behind (`temporary_files`).

Fault injection: `fault_point(name)` marks a point where a test may kill the process. With
the environment variable `KERAS_ATTENTION_FAULT=PATTERN:N` the process SIGKILLs itself the
N-th time it reaches a point whose name matches `PATTERN` (`fnmatch`, e.g. `write:epoch_*`);
unset, a point costs one comparison. The named points:

- `write:<file name>`: an atomic write here, its temporary file complete but not yet renamed;
- `step`: the end of a training batch, before its backup (`ClusterBackupAndRestore`);
- `backup`: inside a backup, between the renames of its weights and of its metadata;
- `epoch_end`: an epoch's checkpoint, scores and log row written, its backup not yet;
- `export`: the SavedModel exported, `bleu.json` not yet updated.

Disk-full injection: with `KERAS_ATTENTION_DISK_FULL=PATTERN:N`, the N-th time the process
reaches a point matching `PATTERN`, the disk "fills up" for it: its file size limit drops to 0
(`RLIMIT_FSIZE`, with `SIGXFSZ` ignored), so from then on every write of a byte fails with
`OSError` (`EFBIG`), as writes to a full disk fail with `ENOSPC`. With
`KERAS_ATTENTION_DISK_FULL_BYTES=B`, files may still grow to B bytes: a larger file fails
half-written, as on a disk that fills during the write. POSIX only.
"""

import contextlib
import fnmatch
import json
import math
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

FAULT_VARIABLE = "KERAS_ATTENTION_FAULT"
DISK_FULL_VARIABLE = "KERAS_ATTENTION_DISK_FULL"
DISK_FULL_BYTES_VARIABLE = "KERAS_ATTENTION_DISK_FULL_BYTES"


def _parse_fault(text: str | None, variable: str = FAULT_VARIABLE) -> tuple[str, int] | None:
    if not text:
        return None
    pattern, _, count = text.rpartition(":")
    if not pattern or not count.isdigit() or int(count) < 1:
        raise ValueError(f"{variable} must look like POINT:N with N >= 1; got {text!r}")
    return pattern, int(count)


_FAULT = _parse_fault(os.environ.get(FAULT_VARIABLE))
_DISK_FULL = _parse_fault(os.environ.get(DISK_FULL_VARIABLE), DISK_FULL_VARIABLE)
_hits = {FAULT_VARIABLE: 0, DISK_FULL_VARIABLE: 0}


def _reached(variable: str, fault: tuple[str, int] | None, name: str) -> bool:
    """Whether point `name` is the one `fault` (`(pattern, count)`) names, counting hits."""
    if fault is None or not fnmatch.fnmatchcase(name, fault[0]):
        return False
    _hits[variable] += 1
    return _hits[variable] == fault[1]


def _fill_the_disk() -> None:
    """From now on every write of a byte by this process fails (see the module's docstring)."""
    import resource

    limit = int(os.environ.get(DISK_FULL_BYTES_VARIABLE) or 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def fault_point(name: str) -> None:
    """SIGKILLs this process if `KERAS_ATTENTION_FAULT` says to die here, or fills its disk if
    `KERAS_ATTENTION_DISK_FULL` says so (see the module's docstring); does nothing when they
    are unset."""
    if _reached(DISK_FULL_VARIABLE, _DISK_FULL, name):
        _fill_the_disk()
    if _reached(FAULT_VARIABLE, _FAULT, name):
        kill = getattr(signal, "SIGKILL", None)
        if kill is None:  # Windows
            os._exit(137)
        os.kill(os.getpid(), kill)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yields a temporary path beside `path`; renames it onto `path` if the block succeeds.

    The temporary name ends with `suffix` (or `path`'s own suffixes when empty), for writers
    that choose the format from the extension (`model.save`, `save_weights`). If the block
    raises, the temporary file is removed and `path` is left as it was; an `OSError` of the
    block that names no file (a full disk, say) is raised again naming `path`.

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> Path("run").mkdir()
    >>> with atomic_path("run/model.keras") as tmp:
    ...     model.save(tmp)
    >>> os.listdir("run")
    ['model.keras']
    """
    path = Path(path)
    suffix = suffix or "".join(path.suffixes)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(handle)
    os.remove(name)  # writers such as h5py refuse some existing files; they create it
    try:
        try:
            yield Path(name)
        except OSError as error:
            if error.filename is not None or error.errno is None:
                raise
            raise OSError(error.errno, error.strerror, str(path)) from error
        fault_point(f"write:{path.name}")
        os.replace(name, path)
    finally:
        if os.path.exists(name):
            os.remove(name)


def temporary_files(folder: str | os.PathLike, names: list[str]) -> list[Path]:
    """The temporary files (or folders) that atomic writes of `names` in `folder` left behind
    when killed: `.<name>.*`, as `atomic_path` and `write_bytes_atomically` name them."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(
        path
        for path in folder.iterdir()
        if any(fnmatch.fnmatchcase(path.name, f".{name}.*") for name in names)
    )


def write_bytes_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """Writes `data` to `path` atomically, creating its folder if needed; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, suffix=".tmp") as tmp:
        tmp.write_bytes(data)
    return path


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Writes `text` (UTF-8) to `path` atomically."""
    write_bytes_atomically(path, text.encode("utf-8"))


def finite_json_values(data: object) -> object:
    """`data` with every float that is not a finite number (NaN, an infinity) turned into
    `None`, in nested dicts, lists and tuples too (tuples become lists)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_json_values(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_json_values(value) for value in data]
    return data


def json_text(data: object, indent: int | None = 2) -> str:
    """`data` as strict JSON text, ending with a newline.

    `json.dumps` writes NaN and infinities as `NaN` and `Infinity`, which are not JSON: most
    parsers refuse the file. Here they are written as `null` (`finite_json_values`), so a
    metric that is not a number never makes an invalid file; readers of a score must accept
    `null` for it.

    Args:
        data: what to write (dicts, lists, strings, numbers, booleans, `None`).
        indent: as `json.dumps` (`None`: one line).

    Returns:
        The JSON text.

    Raises:
        TypeError: `data` holds a value that JSON cannot represent.
    """
    return json.dumps(finite_json_values(data), indent=indent, allow_nan=False) + "\n"


def write_json_atomically(path: str | os.PathLike, data: object) -> None:
    """Writes `data` as indented, strict JSON to `path` atomically: a float that is not a
    finite number is written as `null` (see `json_text`)."""
    write_text_atomically(path, json_text(data))


def move_folder_into_place(staging: Path, target: Path, overwrite: bool) -> None:
    """Renames the complete folder `staging/model` to `target`.

    With `overwrite`, a folder at `target` is first renamed into `staging` (as `old`, deleted
    with it), so `target` is missing only between two renames and never half-written; if the
    second rename fails, the old folder is put back. Without `overwrite`, a `target` that
    appeared meanwhile (another writer) raises `FileExistsError` naming it.
    """
    if overwrite and target.exists():
        os.replace(target, staging / "old")
    try:
        os.rename(staging / "model", target)
    except OSError as error:
        if (staging / "old").exists():
            os.replace(staging / "old", target)  # puts the old folder back
            raise
        if target.exists():
            raise FileExistsError(f"{target} was created by another writer") from error
        raise
