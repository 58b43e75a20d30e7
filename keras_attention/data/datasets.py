"""The corpus of a run: a user's parallel files, or a corpus known by name, as one
`CorpusSpec` (training, validation and test files, and the languages).

The names are shortcuts to files in a known layout, read by the same path as a user's own:
`"multi30k"` (`train`, `val` and `test2016` in `data_dir`, downloaded when it is not given),
`"shards"` (`train.*.SRC[.gz]` shards, `val.*` and `test.*` in `data_dir`; a split whose
files are absent is held out) and `"generated"` (the project's own English-German corpus,
made in memory). Importing this module loads neither Keras nor TensorFlow.
"""

import dataclasses
import os
from pathlib import Path

from keras_attention.data.corpus_files import ParallelFiles, language_of
from keras_attention.data.generated_corpus import generated_splits

DATASETS = ("generated", "multi30k", "shards")
# A split in memory: (sources, targets).
Pairs = tuple[list[str], list[str]]


@dataclasses.dataclass(frozen=True)
class CorpusSpec:
    """Where a run's splits come from.

    Attributes:
        train: the training files, or pairs in memory (the generated corpus).
        valid: the validation files or pairs; `None`: held out of the training pairs.
        test: the test files or pairs; `None`: held out.
        source_lang: the source language, or `None` if unknown.
        target_lang: the target language, or `None` if unknown.
    """

    train: ParallelFiles | Pairs
    valid: ParallelFiles | Pairs | None
    test: ParallelFiles | Pairs | None
    source_lang: str | None
    target_lang: str | None


def _direction(
    source_lang: str | None, target_lang: str | None, languages: tuple[str, str], name: str
) -> bool:
    """Whether a named corpus of `languages` is read backwards (`source_lang` its second)."""
    first, second = languages
    source = source_lang or (second if target_lang == first else first)
    target = target_lang or (second if source == first else first)
    if {source, target} != set(languages):
        raise ValueError(
            f"dataset={name!r} is {first}-{second}; got source_lang={source_lang!r}, "
            f"target_lang={target_lang!r}"
        )
    return source == second


def _files(folder: Path, stem: str, source: str, target: str) -> ParallelFiles:
    return ParallelFiles((str(folder / f"{stem}.{source}"),), (str(folder / f"{stem}.{target}"),))


def _optional_files(folder: Path, stem: str, source: str, target: str) -> ParallelFiles | None:
    files = _files(folder, stem, source, target)
    present = [Path(p).is_file() for p in (*files.sources, *files.targets)]
    return files if all(present) else None


def named_spec(
    name: str,
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    train_pairs: int | None = None,
    source_lang: str | None = None,
    target_lang: str | None = None,
) -> CorpusSpec:
    """The `CorpusSpec` of a corpus known by name (see the module's docstring); English to
    German unless `source_lang="de"`.

    Raises:
        ValueError: for an unknown name, a direction the corpus does not have, or
            `"shards"` without `data_dir`.
        FileNotFoundError: for `"shards"` without training shards.
    """
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}; got dataset={name!r}")
    backwards = _direction(source_lang, target_lang, ("en", "de"), name)
    source, target = ("de", "en") if backwards else ("en", "de")
    if name == "generated":
        sizes = {} if train_pairs is None else {"num_train": train_pairs}
        splits = {
            split: ([s for s, _ in pairs], [t for _, t in pairs])
            for split, pairs in generated_splits(seed=seed, **sizes).items()
        }
        if backwards:
            splits = {split: (targets, sources) for split, (sources, targets) in splits.items()}
        return CorpusSpec(splits["train"], splits["val"], splits["test"], source, target)
    if name == "shards":
        if data_dir is None:
            raise ValueError("dataset='shards' needs data_dir, the folder of the shards")
        from keras_attention.data.streaming import train_shards

        folder = Path(data_dir)
        sources, targets = train_shards(folder, source, target)
        return CorpusSpec(
            ParallelFiles(tuple(sources), tuple(targets)),
            _optional_files(folder, "val", source, target),
            _optional_files(folder, "test", source, target),
            source,
            target,
        )
    from keras_attention.data.multi30k import multi30k_folder

    folder = multi30k_folder(data_dir)
    return CorpusSpec(
        _files(folder, "train", source, target),
        _files(folder, "val", source, target),
        _files(folder, "test2016", source, target),
        source,
        target,
    )


def files_spec(
    train: list[list[str]],
    valid: list[str] | None = None,
    test: list[str] | None = None,
    source_lang: str | None = None,
    target_lang: str | None = None,
) -> CorpusSpec:
    """The `CorpusSpec` of a user's files: `train` as `[[source, target], ...]` (paths or
    globs), `valid` and `test` as `[source, target]` or `None` (held out). The languages
    default to the training files' suffixes when those are language codes.

    Raises:
        FileNotFoundError: naming the argument and the file or pattern that is missing.
        ValueError: for a pair whose sides match different numbers of files.
    """
    train_files = ParallelFiles.from_patterns(train, "train")
    splits = {
        name: None if pair is None else ParallelFiles.from_patterns([pair], name)
        for name, pair in (("valid", valid), ("test", test))
    }
    found = train_files.languages()
    return CorpusSpec(
        train_files,
        splits["valid"],
        splits["test"],
        source_lang or found[0],
        target_lang or found[1],
    )


def load_corpus(
    name: str = "generated",
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    train_pairs: int | None = None,
) -> dict[str, Pairs]:
    """Loads a named corpus as `{"train": (sources, targets), "val": ..., "test": ...}`, all
    three splits in memory (for a streamed corpus, `"shards"`, the training split is empty).

    Args:
        name: `"generated"`, `"multi30k"` or `"shards"` (see the module's docstring).
        data_dir: the corpus's folder.
        seed: the generated corpus's seed.
        train_pairs: keep only the first `train_pairs` training pairs (`None`: all; 0: none,
            for a caller that needs only the validation and test splits).

    Raises:
        ValueError: for an unknown name, a negative `train_pairs`, or a split that a named
            corpus's folder lacks.
    """
    if train_pairs is not None and train_pairs < 0:
        raise ValueError(f"train_pairs must be None or >= 0; got train_pairs={train_pairs}")
    spec = named_spec(name, data_dir, seed, train_pairs)
    from keras_attention.data.streaming import read_files

    corpus = {}
    for split, part in (("train", spec.train), ("val", spec.valid), ("test", spec.test)):
        if part is None:
            raise ValueError(f"dataset={name!r} in {data_dir} has no {split} files")
        if split == "train" and (name == "shards" or train_pairs == 0):
            corpus[split] = ([], [])
        else:
            corpus[split] = read_files(part) if isinstance(part, ParallelFiles) else part
    if train_pairs is not None:
        sources, targets = corpus["train"]
        corpus["train"] = (sources[:train_pairs], targets[:train_pairs])
    return corpus


__all__ = ["DATASETS", "CorpusSpec", "files_spec", "language_of", "load_corpus", "named_spec"]
