"""Multi30k English-German (WMT16 multimodal task 1): local files or a cached download."""

import gzip
import os
from pathlib import Path

import keras

from keras_attention.core.atomic_files import write_bytes_atomically
from keras_attention.data.streaming import read_parallel
from keras_attention.data.text_files import gzip_errors

# The raw task-1 files of the public Multi30k repository.
DEFAULT_ORIGIN = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
# split -> (local file stem, remote file stem)
SPLITS = {
    "train": ("train", "train"),
    "val": ("val", "val"),
    "test": ("test2016", "test_2016_flickr"),
}
LANGUAGES = ("en", "de")


def _download(origin: str, cache_dir: str | None) -> Path:
    """Downloads and gunzips every split into the Keras cache; returns the folder."""
    if cache_dir is not None:
        # `get_file` silently falls back to /tmp/.keras when `cache_dir` does not exist yet.
        Path(cache_dir).expanduser().mkdir(parents=True, exist_ok=True)
    folder = None
    for local, remote in SPLITS.values():
        for language in LANGUAGES:
            archive = keras.utils.get_file(
                f"multi30k_{remote}.{language}.gz",
                origin=origin.rstrip("/") + f"/{remote}.{language}.gz",
                cache_dir=cache_dir,
                cache_subdir="multi30k",
            )
            folder = Path(archive).parent
            target = folder / f"{local}.{language}"
            if not target.exists():
                with gzip_errors(archive), gzip.open(archive, "rb") as source:
                    write_bytes_atomically(target, source.read())
    return folder


def multi30k_folder(
    data_dir: str | os.PathLike | None = None,
    origin: str = DEFAULT_ORIGIN,
    cache_dir: str | None = None,
) -> Path:
    """`data_dir`, or the folder of the files downloaded (once) from `origin` without it."""
    return Path(data_dir) if data_dir is not None else _download(origin, cache_dir)


def load_multi30k(
    data_dir: str | os.PathLike | None = None,
    origin: str = DEFAULT_ORIGIN,
    cache_dir: str | None = None,
    source_language: str = "en",
) -> dict[str, tuple[list[str], list[str]]]:
    """Loads Multi30k English-German as raw, true-cased sentences.

    Args:
        data_dir: a folder with `train.{en,de}`, `val.{en,de}` and `test2016.{en,de}`; when
            `None`, the files are downloaded from `origin` once and cached by
            `keras.utils.get_file` (in `cache_dir`, default `~/.keras`).
        origin: base URL of the gzipped raw files (a `file://` URL works too).
        cache_dir: where downloads are cached.
        source_language: `"en"` (English to German) or `"de"` (German to English).

    Returns:
        `{"train": (sources, targets), "val": ..., "test": ...}`; `test` is test2016.

    Raises:
        ValueError: for an unknown language; the errors of `read_parallel` for bad files.

    Example:

    >>> folder = Path("data/multi30k")  # a stand-in with Multi30k's files, 2 pairs each
    >>> folder.mkdir(parents=True)
    >>> for split in ("train", "val", "test2016"):
    ...     _ = (folder / f"{split}.en").write_text("A dog runs.\\nTwo men eat.\\n")
    ...     _ = (folder / f"{split}.de").write_text("Ein Hund rennt.\\nZwei Männer essen.\\n")
    >>> splits = load_multi30k("data/multi30k")  # Multi30k's own: 29000 training pairs
    >>> splits["test"]
    (['A dog runs.', 'Two men eat.'], ['Ein Hund rennt.', 'Zwei Männer essen.'])
    """
    if source_language not in LANGUAGES:
        raise ValueError(f"source_language must be one of {LANGUAGES}; got {source_language!r}")
    target_language = "de" if source_language == "en" else "en"
    folder = multi30k_folder(data_dir, origin, cache_dir)
    return {
        split: read_parallel(
            folder / f"{local}.{source_language}", folder / f"{local}.{target_language}"
        )
        for split, (local, _) in SPLITS.items()
    }
