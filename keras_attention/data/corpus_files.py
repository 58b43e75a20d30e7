"""Parallel text files as a user names them: one file, several files or a glob per side,
plain or gzip, and the languages their suffixes give.

This module needs only the standard library (and `data.text_files`), so that a tool can
check its file arguments before TensorFlow starts. The lines are read by `data.streaming`
(`read_parallel`, `parallel_text`), which checks alignment, UTF-8 and blank lines, and in
Python by `iterate_pairs`, which checks the same.
"""

import collections
import dataclasses
import glob
import os
import re
from collections.abc import Iterator, Sequence
from itertools import zip_longest
from pathlib import Path

from keras_attention.data.text_files import decode_line, file_lines

# A language code as file suffixes give it: ISO 639-1/-3 ("de", "deu"), optionally with a
# region or script ("pt_br", "zh-Hans"); the common suffixes that are not languages excluded.
_LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}([_-][A-Za-z0-9]{2,8})?$")
NOT_LANGUAGES = frozenset(
    {"txt", "raw", "tok", "bpe", "spm", "sp", "tsv", "csv", "xml", "sgm", "out", "src", "tgt",
     "ref", "hyp", "dat", "lst", "log", "json", "gz", "bz2", "xz", "zip", "tmp", "bak", "old",
     "new"}
)  # fmt: skip
_GLOB_CHARACTERS = re.compile(r"[*?\[]")


def language_of(path: str | os.PathLike) -> str | None:
    """The language code that `path`'s suffix gives (`.gz` aside), or `None`.

    Example:

    >>> language_of("corpus/train.de.gz"), language_of("my.pt_br"), language_of("notes.txt")
    ('de', 'pt_br', None)
    """
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        return None
    if suffix.lower() in NOT_LANGUAGES or not _LANGUAGE_CODE.match(suffix):
        return None
    return suffix


def _existing_folder(pattern: str) -> str:
    """The longest folder part of `pattern` that exists as written ("" if none)."""
    folder = os.path.dirname(pattern)
    while folder and not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return ""
        folder = parent
    return folder


def _glob_files(pattern: str) -> list[str]:
    """The files a glob pattern matches, sorted. A folder part that exists as written
    (`run [1]/train.*.en`) is that folder, not a pattern; if nothing matches so, the whole
    of `pattern` is a pattern."""
    folder = _existing_folder(pattern)
    patterns = [glob.escape(folder) + pattern[len(folder) :]] if folder else []
    for candidate in [*patterns, pattern]:
        matches = sorted(p for p in glob.glob(candidate) if Path(p).is_file())
        if matches:
            return matches
    return []


def expand(pattern: str, what: str) -> list[str]:
    """The files `pattern` names: itself if it is a file, else its glob matches, sorted (a
    folder part that exists as written is read as itself: `run [1]/train.*.en`).

    Args:
        pattern: a path, or a glob pattern (`*`, `?`, `[...]`).
        what: the argument it came from, for the error message (e.g. `"--train source"`).

    Raises:
        FileNotFoundError: naming `what` and `pattern` if nothing matches.
        ValueError: if it names a folder.
    """
    path = Path(pattern)
    if path.is_dir():
        raise ValueError(f"{what}: {pattern} is a folder, not a text file")
    if path.is_file():
        return [str(path)]
    if _GLOB_CHARACTERS.search(pattern):
        matches = _glob_files(pattern)
        if matches:
            return matches
        raise FileNotFoundError(f"{what}: no file matches {pattern}")
    raise FileNotFoundError(f"{what}: corpus file not found: {pattern}")


@dataclasses.dataclass(frozen=True)
class ParallelFiles:
    """Aligned text files: line i of `sources[k]` translates line i of `targets[k]`.

    Attributes:
        sources: the source files (plain, or gzip by the `.gz` suffix).
        targets: the target files, as many, in the same order.
    """

    sources: tuple[str, ...]
    targets: tuple[str, ...]

    @classmethod
    def from_patterns(cls, pairs: Sequence[Sequence[str]], what: str) -> "ParallelFiles":
        """The files of `[[source pattern, target pattern], ...]` (e.g. repeated `--train
        SRC TGT`), each pattern a path or a glob; a glob's matches pair up in sorted order.

        Raises:
            FileNotFoundError: naming the pattern that matches nothing.
            ValueError: if the two sides of a pair match different numbers of files, or a
                pair is not two patterns.
        """
        sources, targets = [], []
        for pair in pairs:
            if len(pair) != 2 or not all(isinstance(p, str) and p for p in pair):
                raise ValueError(f"{what} takes two files, SOURCE TARGET; got {list(pair)!r}")
            left = expand(pair[0], f"{what} source")
            right = expand(pair[1], f"{what} target")
            if len(left) != len(right):
                raise ValueError(
                    f"{what}: {pair[0]} matches {len(left)} files but {pair[1]} matches "
                    f"{len(right)}; shard i of one side must translate shard i of the other"
                )
            sources += left
            targets += right
        if not sources:
            raise ValueError(f"{what} names no files")
        return cls(tuple(sources), tuple(targets))

    def languages(self) -> tuple[str | None, str | None]:
        """The source and target languages the suffixes give, when every file of a side
        gives the same one (else `None` for that side)."""
        found = []
        for side in (self.sources, self.targets):
            codes = {language_of(path) for path in side}
            found.append(codes.pop() if len(codes) == 1 else None)
        return found[0], found[1]

    def size_bytes(self) -> int:
        """The bytes of the source and target files on disk (compressed, for gzip)."""
        return sum(Path(path).stat().st_size for path in (*self.sources, *self.targets))


MISALIGNED = (
    "parallel files differ in length: {shorter} ends after line {lines}, {longer} goes on; "
    "line i of one must translate line i of the other"
)


def iterate_pairs(
    files: ParallelFiles, counts: collections.Counter | None = None
) -> Iterator[tuple[str, str]]:
    """The non-blank pairs of `files`, stripped, read in Python one line at a time (for a
    pass over a corpus too large for memory: counting it, sampling it). It checks what the
    training stream (`data.streaming`) would find only later: the files' alignment, UTF-8,
    gzip damage; a byte-order mark on a file's first line is dropped.

    Args:
        files: the parallel files.
        counts: if given, `counts["blank"]` is increased by each pair dropped for a blank
            side.

    Raises:
        FileNotFoundError: naming a missing file.
        ValueError: naming both files of a pair whose line counts differ (and where the
            shorter ends, `MISALIGNED`), or the file and line of a line that is not UTF-8.
        CorruptFileError: naming a gzip file that is truncated or corrupt.
    """
    for source_path, target_path in zip(files.sources, files.targets, strict=True):
        raw_pairs = zip_longest(file_lines(source_path), file_lines(target_path))
        for number, (source, target) in enumerate(raw_pairs, start=1):
            if source is None or target is None:
                shorter, longer = (
                    (source_path, target_path) if source is None else (target_path, source_path)
                )
                raise ValueError(
                    MISALIGNED.format(shorter=shorter, lines=number - 1, longer=longer)
                )
            source = decode_line(source, source_path, number).strip()
            target = decode_line(target, target_path, number).strip()
            if source and target:
                yield source, target
            elif counts is not None:
                counts["blank"] += 1
