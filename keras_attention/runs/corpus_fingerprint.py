"""The fingerprint of a run's corpus files (`corpus.json` in the run folder): a resumed run
goes on only with the files it started with.

A run learns its tokenizer from its training files once, at its start. Resumed after a
file was corrected at the same path, it would go on with the old tokenizer (the new text
full of `<unk>`) and mix two corpora in one model. So the run records, for each of its files,
its path, size and SHA-256 when it starts, and a resume compares them: a file whose content
changed, or a split with other files, is refused, naming the file. Moving or renaming the
files is fine: content is what is compared, split by split and side by side.

Example:

>>> _ = Path("c.en").write_text("A dog.\\n"), Path("c.de").write_text("Ein Hund.\\n")
>>> files = ParallelFiles(("c.en",), ("c.de",))
>>> spec = CorpusSpec(files, None, None, "en", "de")
>>> write_fingerprint("run", corpus_fingerprint(spec))
>>> check_fingerprint("run", corpus_fingerprint(spec))  # the same files: nothing to say
>>> _ = Path("c.de").write_text("Ein Hund läuft.\\n")
>>> check_fingerprint("run", corpus_fingerprint(spec))
Traceback (most recent call last):
ValueError: the training target file .../c.de changed since the run in run started ...
"""

import hashlib
import json
import os
from pathlib import Path

from keras_attention.core.atomic_files import write_json_atomically
from keras_attention.data.corpus_files import ParallelFiles
from keras_attention.data.datasets import CorpusSpec

FINGERPRINT_FILE = "corpus.json"
SPLIT_NAMES = {"train": "training", "valid": "validation", "test": "test"}
_CHUNK = 2**20


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of the file at `path`, as hexadecimal, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def corpus_fingerprint(spec: CorpusSpec) -> dict:
    """`{split: {"sources": [...], "targets": [...]}}`, each file as `{"path", "bytes",
    "sha256"}`, for the splits of `spec` read from files (pairs in memory, the generated
    corpus, have no files and are left out: the seed makes them)."""
    splits = {}
    for name in SPLIT_NAMES:
        part = getattr(spec, name)
        if not isinstance(part, ParallelFiles):
            continue
        splits[name] = {
            side: [
                {
                    "path": os.path.abspath(path),
                    "bytes": os.path.getsize(path),
                    "sha256": file_digest(path),
                }
                for path in getattr(part, side)
            ]
            for side in ("sources", "targets")
        }
    return splits


def write_fingerprint(run_dir: str | os.PathLike, fingerprint: dict) -> None:
    """Writes `corpus.json`, a `corpus_fingerprint`, into `run_dir`."""
    write_json_atomically(Path(run_dir) / FINGERPRINT_FILE, fingerprint)


def _changes(saved: dict, current: dict, run_dir: Path) -> list[str]:
    """What differs between two fingerprints, one phrase each."""
    changes = []
    for name in sorted(set(saved) | set(current)):
        split = SPLIT_NAMES.get(name, name)
        if (name in saved) != (name in current):
            had = "had" if name in saved else "had no"
            changes.append(f"the run in {run_dir} {had} {split} files when it started")
            continue
        for side in ("sources", "targets"):
            before, now = saved[name].get(side, []), current[name][side]
            kind = "source" if side == "sources" else "target"
            if len(before) != len(now):
                changes.append(
                    f"the {split} {kind} files are {len(now)}, but the run in {run_dir} "
                    f"started with {len(before)}"
                )
                continue
            for old, new in zip(before, now, strict=True):
                if (old.get("sha256"), old.get("bytes")) != (new["sha256"], new["bytes"]):
                    moved = "" if old.get("path") == new["path"] else f" (was {old.get('path')})"
                    changes.append(
                        f"the {split} {kind} file {new['path']}{moved} changed since the run "
                        f"in {run_dir} started"
                    )
    return changes


def check_fingerprint(run_dir: str | os.PathLike, current: dict) -> None:
    """Refuses to resume the run in `run_dir` with corpus files other than those it started
    with (its `corpus.json`); a run without one (older than the check) is not checked.

    Args:
        run_dir: the run's folder.
        current: the `corpus_fingerprint` of the files the resumed run was given.

    Raises:
        ValueError: naming each file that changed, and what to do.
    """
    run_dir = Path(run_dir)
    path = run_dir / FINGERPRINT_FILE
    if not path.is_file():
        return
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(saved, dict) or not all(isinstance(v, dict) for v in saved.values()):
            raise ValueError("not an object of splits")
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is corrupt ({error}); remove it to resume unchecked") from None
    changes = _changes(saved, current, run_dir)
    if changes:
        raise ValueError(
            f"{'; '.join(changes)} (its tokenizer and weights learned from the files "
            f"{FINGERPRINT_FILE} records): restore the files to resume, or start afresh on the "
            "new ones with another output folder or --overwrite"
        )
