"""What a tool may write: never one of its own inputs, never a file of a run folder.

Every tool that writes a file or a folder checks it here before any work
(`check_output_file`, `check_output_folder`; `tools/train.py` with `check_run_output`), and is
refused, with one line naming the option and the file, when the output

- is one of the tool's inputs (compared after resolving symlinks and `..`, and as the same
  file on disk: a hard link is refused too);
- is, or lies inside, a file or folder that a run writes (`runs.folder.RUN_FILES`: its
  `checkpoints/`, `backup/`, `config.json`, `model.keras`, tokenizer files, score files,
  logs, ...) of any run folder (a folder whose `config.json` holds a run's settings:
  `models.run_folder.is_run_folder`), the tool's own run or another;
- is a folder that holds one of the tool's inputs, or is a run folder itself (except for the
  run that `tools/train.py` writes).

The tools' default outputs stay allowed: a file beside a run's own files
(`RUN/averaged.keras`) is none of them, and a tool passes the run file that is its default
output as `allowed` (`tools/export.py`: `RUN/export`).
"""

import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from keras_attention.runs.folder import RUN_FILES
from keras_attention.runs.run_lock import LOCK_FILE

# The names, in a run folder, of what a run writes: no tool writes there.
RUN_FOLDER_FILES = frozenset((*RUN_FILES, LOCK_FILE))

PathLike = str | os.PathLike


class OutputGuardError(ValueError):
    """An output a tool must not write; the message names the option and the file."""


def _real(path: PathLike) -> Path:
    """`path` with its symlinks and `..` resolved (its missing part kept as written)."""
    return Path(os.path.realpath(os.fspath(path)))


def _same_file(first: PathLike, second: PathLike) -> bool:
    """Whether two paths name one existing file or folder (a hard link, a bind mount)."""
    try:
        return os.path.samefile(first, second)
    except OSError:  # either is missing
        return False


def _is_run_folder(folder: Path) -> bool:
    from keras_attention.models.run_folder import is_run_folder

    return is_run_folder(folder)


def _run_file(target: Path, allowed: Sequence[Path]) -> tuple[Path, str] | None:
    """The run folder and the name of the run's file that `target` is or lies inside
    (`None` if it is none, or one of `allowed`)."""
    if any(target == path or path in target.parents for path in allowed):
        return None
    for folder in target.parents:
        name = target.relative_to(folder).parts[0]
        if name in RUN_FOLDER_FILES and _is_run_folder(folder):
            return folder, name
    return None


def _refuse(option: str, path: PathLike, problem: str) -> None:
    raise OutputGuardError(f"{option} {path}: {problem}")


def _check_inputs(
    option: str, path: PathLike, target: Path, inputs: Iterable[PathLike | None], folder: bool
) -> None:
    """Refuses `target` if it is one of `inputs` or, as a folder, holds one."""
    for source in inputs:
        if source is None:
            continue
        real = _real(source)
        if real == target or _same_file(source, path):
            _refuse(option, path, f"is the tool's input {source}; writing it would replace it")
        if folder and target in real.parents:
            _refuse(option, path, f"holds the tool's input {source}; choose another folder")


def _check_run_files(option: str, path: PathLike, target: Path, allowed: Sequence[Path]) -> None:
    """Refuses `target` if it is, or lies inside, a file or folder that a run writes."""
    found = _run_file(target, allowed)
    if found is not None:
        run, name = found
        where = f"the file {name}" if target == run / name else f"inside {name}/"
        _refuse(
            option,
            path,
            f"is {where} of the run in {run}; writing it would damage that run; choose a "
            "path outside the run's own files",
        )


def check_output_file(
    path: PathLike,
    option: str,
    inputs: Iterable[PathLike | None] = (),
    allowed: Iterable[PathLike] = (),
) -> None:
    """Checks, before any work, that a tool may write the file `path`.

    Args:
        path: the file the tool will write (or replace).
        option: the option that named it, e.g. `"--output"`, for the message.
        inputs: the files and folders the tool reads (`None` entries are skipped).
        allowed: run files the tool writes by default, allowed although a run wrote them.

    Raises:
        OutputGuardError: naming `option` and `path`, if `path` is one of `inputs` or one
            of the files of a run folder.
    """
    target = _real(path)
    _check_inputs(option, path, target, inputs, folder=False)
    _check_run_files(option, path, target, [_real(p) for p in allowed])


def check_output_folder(
    path: PathLike,
    option: str,
    inputs: Iterable[PathLike | None] = (),
    allowed: Iterable[PathLike] = (),
    may_be_run: bool = False,
) -> None:
    """Checks, before any work, that a tool may write in the folder `path`.

    Args:
        path: the folder the tool will create or write in.
        option: the option that named it, e.g. `"--output"`, for the message.
        inputs: the files and folders the tool reads (`None` entries are skipped).
        allowed: run folders the tool writes by default (`RUN/export`), allowed although
            they are a run's.
        may_be_run: whether `path` may be a run folder itself (the run `tools/train.py`
            writes or resumes).

    Raises:
        OutputGuardError: naming `option` and `path`, if `path` is one of `inputs`, holds
            one, is a run folder (unless `may_be_run`) or is, or lies inside, one of the
            files of a run folder.
    """
    target = _real(path)
    _check_inputs(option, path, target, inputs, folder=True)
    _check_run_files(option, path, target, [_real(p) for p in allowed])
    if not may_be_run and _is_run_folder(target):
        _refuse(option, path, "is a run folder; writing in it would mix with the run's files")


def corpus_inputs(patterns: Iterable[str | None]) -> list[str]:
    """The files that corpus arguments name (paths or globs, `data.corpus_files.expand`);
    a pattern that names none is left to the tool's own check of its corpus."""
    from keras_attention.data.corpus_files import expand

    files = []
    for pattern in patterns:
        if pattern is None:
            continue
        try:
            files += expand(pattern, "corpus")
        except (OSError, ValueError):  # reported by the tool when it reads its corpus
            files.append(pattern)
    return files


def check_run_output(config: object) -> None:
    """Checks, before any work, the `output_dir` of a training run (`runs.config.TrainConfig`)
    against the run's inputs: its `train`, `valid` and `test` files and its `data_dir`.

    Raises:
        OutputGuardError: naming `--run-dir`, if it is, or holds, one of those inputs,
            or lies inside the files of a run folder.
    """
    pairs = [*(config.train or []), config.valid or [], config.test or []]
    inputs = [*corpus_inputs(p for pair in pairs for p in pair), config.data_dir]
    check_output_folder(config.output_dir, "--run-dir", inputs, may_be_run=True)


def check_standard_output(inputs: Iterable[PathLike | None]) -> None:
    """Refuses a standard output redirected into one of the tool's input files
    (`tool in.txt > in.txt`: the shell has emptied the input already, and the tool would
    silently translate nothing).

    Raises:
        OutputGuardError: naming the input file.
    """
    try:
        output = os.fstat(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # no file behind it (a test's capture)
        return
    if not stat.S_ISREG(output.st_mode):
        return
    for source in inputs:
        try:
            found = os.stat(source)
        except (OSError, TypeError, ValueError):
            continue
        if (found.st_dev, found.st_ino) == (output.st_dev, output.st_ino):
            raise OutputGuardError(
                f"standard output is the input file {source}, which the redirection emptied; "
                "write the output to another file"
            )
