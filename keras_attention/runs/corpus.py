"""A run's corpus: its splits read (or its training files left to stream), validation and
test held out when none is given, their sources removed from training, and the size that
picks the recipe (`RunCorpus`); the held-out files in the run folder's `data/`.
"""

import dataclasses
import logging
import os
from pathlib import Path

from keras_attention.core.atomic_files import write_text_atomically
from keras_attention.data.corpus_files import ParallelFiles, iterate_pairs
from keras_attention.data.datasets import CorpusSpec, files_spec, named_spec
from keras_attention.data.held_out import hold_out, remove_overlap, sample_pairs
from keras_attention.runs.recipes import CorpusStats, count_words

logger = logging.getLogger(__name__)

# Training files larger than this (on disk) are streamed, not read into memory.
STREAM_BYTES = 512 * 2**20
WORDS_SAMPLE = 100_000  # pairs of a streamed corpus whose words are counted
DATA_FOLDER = "data"  # the run folder's held-out splits
SPLIT_FILE_STEMS = {"val": "valid", "test": "test"}


def corpus_spec(config) -> CorpusSpec:
    """The `CorpusSpec` of a `TrainConfig`: its `train` files, or its named `dataset`.

    Raises:
        FileNotFoundError, ValueError: naming the argument and file at fault.
    """
    if config.train is not None:
        return files_spec(
            config.train, config.valid, config.test, config.source_lang, config.target_lang
        )
    spec = named_spec(
        config.dataset or "generated",
        config.data_dir,
        config.seed,
        config.train_pairs,
        config.source_lang,
        config.target_lang,
    )
    given = {"valid": config.valid, "test": config.test}
    if any(given.values()):
        replaced = {
            name: ParallelFiles.from_patterns([pair], name)
            for name, pair in given.items()
            if pair is not None
        }
        spec = dataclasses.replace(spec, **replaced)
    return spec


def held_out_files(output_dir: Path, split: str, spec: CorpusSpec) -> tuple[Path, Path]:
    """The run folder's files of a held-out split: `data/valid.SRC`/`data/valid.TGT` (or
    `.source`/`.target` where the languages are unknown or the same)."""
    source, target = spec.source_lang, spec.target_lang
    if source is None or target is None or source == target:
        source = f"source.{source}" if source else "source"
        target = f"target.{target}" if target else "target"
    stem = output_dir / DATA_FOLDER / SPLIT_FILE_STEMS[split]
    return Path(f"{stem}.{source}"), Path(f"{stem}.{target}")


@dataclasses.dataclass
class RunCorpus:
    """A run's corpus, ready to tokenize.

    Attributes:
        spec: where it came from.
        corpus: `{"train": pairs, "val": pairs, "test": pairs}` in memory (the training
            pairs empty when streamed).
        train_files: the training files, when they are streamed.
        held_out: the splits held out of the training pairs (`"val"`, `"test"`).
        removed: training pairs removed because their source is a validation or test
            source (`None` for a stream, which leaves them out as it reads).
        stats: the corpus's size, for the recipe.
    """

    spec: CorpusSpec
    corpus: dict
    train_files: ParallelFiles | None
    held_out: tuple[str, ...]
    removed: int | None
    stats: CorpusStats

    @property
    def excluded_sources(self) -> list[str]:
        """The validation and test sources, which training leaves out."""
        return [*self.corpus["val"][0], *self.corpus["test"][0]]


def _read(part):
    from keras_attention.data.streaming import read_files

    return read_files(part) if isinstance(part, ParallelFiles) else part


def load_run_corpus(config, spec: CorpusSpec | None = None) -> RunCorpus:
    """Reads a run's corpus (see the module's docstring).

    Args:
        config: the run's `TrainConfig` (`stream`, `train_pairs`, `seed`; unresolved is
            fine).
        spec: its `corpus_spec`, if made already.

    Raises:
        FileNotFoundError, ValueError: a missing, misaligned or invalid file (naming file
            and line), or too few pairs to hold out a split.
    """
    spec = spec or corpus_spec(config)
    held_out = tuple(
        name for name, part in (("val", spec.valid), ("test", spec.test)) if part is None
    )
    streamed = config.stream
    if streamed is None:
        streamed = isinstance(spec.train, ParallelFiles) and (
            config.dataset == "shards" or spec.train.size_bytes() > STREAM_BYTES
        )
    if streamed and not isinstance(spec.train, ParallelFiles):
        raise ValueError("stream=True needs training files; the generated corpus is in memory")
    corpus = {name: _read(part) for name, part in (("val", spec.valid), ("test", spec.test))
              if part is not None}  # fmt: skip
    if streamed:
        count, sampled = sample_pairs(iterate_pairs(spec.train), held_out, config.seed)
        corpus.update(sampled)
        corpus["train"] = ([], [])
        words_sample = []
        for number, pair in enumerate(iterate_pairs(spec.train)):
            if number == WORDS_SAMPLE:
                break
            words_sample.append(pair)
        words = count_words([s for s, _ in words_sample], [t for _, t in words_sample])
        held = sum(len(corpus[name][0]) for name in held_out)
        stats = CorpusStats(pairs=count - held, words=words, streamed=True)
        return RunCorpus(spec, corpus, spec.train, held_out, None, stats)
    sources, targets = _read(spec.train)
    if config.train_pairs is not None:
        sources, targets = sources[: config.train_pairs], targets[: config.train_pairs]
    (sources, targets), sampled = hold_out(sources, targets, held_out, config.seed)
    corpus.update(sampled)
    excluded = [*corpus["val"][0], *corpus["test"][0]]
    (sources, targets), removed = remove_overlap(sources, targets, excluded)
    corpus["train"] = (sources, targets)
    stats = CorpusStats(pairs=len(sources), words=count_words(sources, targets))
    return RunCorpus(spec, corpus, None, held_out, removed, stats)


def write_held_out(output_dir: Path, run_corpus: RunCorpus) -> list[Path]:
    """Writes the held-out splits into `output_dir/data/` (atomically; an existing file with
    the same lines is left as it is); returns their paths."""
    written = []
    for split in run_corpus.held_out:
        paths = held_out_files(output_dir, split, run_corpus.spec)
        paths[0].parent.mkdir(parents=True, exist_ok=True)
        for path, lines in zip(paths, run_corpus.corpus[split], strict=True):
            text = "".join(line + "\n" for line in lines)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                write_text_atomically(path, text)
            written.append(path)
    return written


def evaluation_splits(config, output_dir: Path) -> dict:
    """The validation and test splits of a trained run (a resolved `TrainConfig`): its
    given files, its named corpus's, or the held-out ones in `output_dir/data/` (its
    training files are not needed).

    Raises:
        FileNotFoundError: naming a missing file (a held-out split not written yet).
        ValueError: naming a file that is not valid.
    """
    from keras_attention.data.streaming import read_parallel

    if config.train is not None:
        spec = CorpusSpec(
            ([], []),
            None if config.valid is None else ParallelFiles.from_patterns([config.valid], "valid"),
            None if config.test is None else ParallelFiles.from_patterns([config.test], "test"),
            config.source_lang,
            config.target_lang,
        )
    else:
        spec = corpus_spec(dataclasses.replace(config, train_pairs=0))
    splits = {}
    for split, part in (("val", spec.valid), ("test", spec.test)):
        if part is None:
            part = read_parallel(*held_out_files(Path(output_dir), split, spec))
        splits[split] = _read(part)
    return splits


def run_evaluation_splits(run_dir: str | os.PathLike) -> tuple[dict, str | None]:
    """`evaluation_splits` of the run in `run_dir` (from its `config.json`), and its target
    language.

    Raises:
        FileNotFoundError, ValueError: naming a missing or corrupt file.
    """
    from keras_attention.runs.config import TrainConfig
    from keras_attention.runs.files import read_run_config

    saved = read_run_config(run_dir)
    names = {field.name for field in dataclasses.fields(TrainConfig)}
    config = TrainConfig(**{name: value for name, value in saved.items() if name in names})
    if config.train is None and config.dataset is None:
        config = dataclasses.replace(config, dataset="generated")
    try:
        return evaluation_splits(config, Path(run_dir)), config.target_lang
    except TypeError as error:  # a field of the wrong type in config.json
        raise ValueError(f"{Path(run_dir) / 'config.json'} is corrupt: {error}") from None
