"""A run's corpus: its splits read (or its training files left to stream), validation and
test held out when none is given, their sources removed from training, and the size that
picks the recipe (`RunCorpus`); the validation and test splits kept in the run folder's
`data/`, which its evaluation reads wherever the folder is.
"""

import collections
import dataclasses
import gzip
import logging
import os
from pathlib import Path

from keras_attention.core.atomic_files import write_text_atomically
from keras_attention.data.corpus_files import ParallelFiles, iterate_pairs
from keras_attention.data.datasets import CorpusSpec, files_spec, named_spec
from keras_attention.data.held_out import hold_out, remove_overlap, sample_pairs
from keras_attention.runs.recipes import CorpusStats, count_words
from keras_attention.runs.report_lines import count_text

logger = logging.getLogger(__name__)

# Training files larger than this (on disk) are streamed, not read into memory.
STREAM_BYTES = 512 * 2**20
WORDS_SAMPLE = 100_000  # pairs of a streamed corpus whose words are counted
DATA_FOLDER = "data"  # the run folder's held-out splits
SPLIT_FILE_STEMS = {"val": "valid", "test": "test"}


def corpus_spec(config) -> CorpusSpec:
    """The `CorpusSpec` of a `TrainConfig`: its `train` files, or its named `dataset`.

    Raises:
        FileNotFoundError, ValueError: naming the argument and file at fault (one file
            given as both source and target, say).
    """
    if config.train is not None:
        spec = files_spec(
            config.train, config.valid, config.test, config.source_lang, config.target_lang
        )
        check_distinct_files(spec)
        return spec
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
        check_distinct_files(spec)
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
            source (a stream leaves them out as it reads; they are counted in a pass
            before).
        stats: the corpus's size, for the recipe.
        blank: training pairs dropped because a side is blank.
    """

    spec: CorpusSpec
    corpus: dict
    train_files: ParallelFiles | None
    held_out: tuple[str, ...]
    removed: int | None
    stats: CorpusStats
    blank: int | None = None

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
        counts = collections.Counter()
        pairs = iterate_pairs(spec.train, counts)
        count, sampled = sample_pairs(pairs, held_out, config.seed)
        corpus.update(sampled)
        corpus["train"] = ([], [])
        # A second pass: the words of the first pairs, and the pairs the stream will leave
        # out as copies of a held-out source (each held-out pair itself among them).
        excluded = {sentence.strip() for split in ("val", "test") for sentence in corpus[split][0]}
        words_sample, copies = [], 0
        for number, pair in enumerate(iterate_pairs(spec.train)):
            if number < WORDS_SAMPLE:
                words_sample.append(pair)
            copies += pair[0] in excluded
        _check_not_copies([s for s, _ in words_sample], [t for _, t in words_sample], spec.train)
        words = count_words([s for s, _ in words_sample], [t for _, t in words_sample])
        held = sum(len(corpus[name][0]) for name in held_out)
        removed = copies - held
        if count - copies <= 0:
            raise ValueError(
                f"no training pair is left in {_described(spec.train)}: "
                f"{dropped_text(removed, counts['blank'])}; give training files with other "
                "sentences"
            )
        stats = CorpusStats(pairs=count - copies, words=words, streamed=True)
        return RunCorpus(spec, corpus, spec.train, held_out, removed, stats, counts["blank"])
    sources, targets = _read(spec.train)
    blank = _blank_pairs(spec.train, len(sources))
    if config.train_pairs is not None:
        sources, targets = sources[: config.train_pairs], targets[: config.train_pairs]
    _check_not_copies(sources, targets, spec.train)
    (sources, targets), sampled = hold_out(sources, targets, held_out, config.seed)
    corpus.update(sampled)
    excluded = [*corpus["val"][0], *corpus["test"][0]]
    (sources, targets), removed = remove_overlap(sources, targets, excluded)
    if not sources:
        raise ValueError(
            f"no training pair is left in {_described(spec.train)}: "
            f"{dropped_text(removed, blank)}; give training files with other sentences"
        )
    corpus["train"] = (sources, targets)
    stats = CorpusStats(pairs=len(sources), words=count_words(sources, targets))
    return RunCorpus(spec, corpus, None, held_out, removed, stats, blank)


def dropped_text(removed: int | None, blank: int | None) -> str:
    """What training left out of a corpus and why, for the run's report and its errors:
    `removed` copies of held-out pairs and `blank` pairs (`None` or 0: none).

    Example:

    >>> dropped_text(998, 2)
    '998 pairs removed as copies of a validation or test source, 2 pairs with a blank side'
    """
    parts = []
    if removed:
        parts.append(
            f"{count_text(removed, 'pair')} removed as copies of a validation or test source"
        )
    if blank:
        parts.append(f"{count_text(blank, 'pair')} with a blank side")
    return ", ".join(parts) or "no pair left out"


def _described(part) -> str:
    """The files of a split, for a message (`generated pairs` for pairs in memory)."""
    if not isinstance(part, ParallelFiles):
        return "the generated pairs"
    pairs = [
        f"{source} and {target}" for source, target in zip(part.sources, part.targets, strict=True)
    ]
    return "; ".join(pairs)


def _blank_pairs(part, kept: int) -> int:
    """How many pairs of `part` a side left blank, so that reading them dropped them: its
    lines less the `kept` pairs (0 for pairs in memory)."""
    if not isinstance(part, ParallelFiles):
        return 0
    lines = 0
    for source in part.sources:
        with (gzip.open if source.endswith(".gz") else open)(source, "rb") as handle:
            lines += sum(1 for _ in handle)
    return lines - kept


def _check_not_copies(sources: list[str], targets: list[str], part) -> None:
    """Refuses a corpus whose every target is its source: the same text in both files (the
    source file given twice, or copied), which would train a copying "translator"."""
    if sources and all(s.strip() == t.strip() for s, t in zip(sources, targets, strict=True)):
        raise ValueError(
            f"every training pair's target is its source in {_described(part)}: the two "
            "sides hold the same text; give the target language's file as the second"
        )


def check_distinct_files(spec: CorpusSpec) -> None:
    """Refuses a split whose source and target are the same file (one path given twice,
    or two names of one file).

    Raises:
        ValueError: naming the split and the file.
    """
    for name, part in (("train", spec.train), ("valid", spec.valid), ("test", spec.test)):
        if not isinstance(part, ParallelFiles):
            continue
        for source, target in zip(part.sources, part.targets, strict=True):
            if os.path.samefile(source, target):
                raise ValueError(
                    f"{name} names one file as both source and target ({source}"
                    f"{'' if source == target else ' = ' + target}): give the source "
                    "language's file, then the target language's"
                )


def write_held_out(output_dir: Path, run_corpus: RunCorpus) -> list[Path]:
    """Writes the validation and test splits, held out or given, into `output_dir/data/`
    (atomically; an existing file with the same lines is left as it is); returns their
    paths. The run folder keeps what it was scored on, wherever it is read from."""
    written = []
    for split in SPLIT_FILE_STEMS:
        paths = held_out_files(output_dir, split, run_corpus.spec)
        paths[0].parent.mkdir(parents=True, exist_ok=True)
        for path, lines in zip(paths, run_corpus.corpus[split], strict=True):
            text = "".join(line + "\n" for line in lines)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                write_text_atomically(path, text)
            written.append(path)
    return written


def evaluation_splits(config, output_dir: Path) -> dict:
    """The validation and test splits of a trained run (a resolved `TrainConfig`): the
    copies in `output_dir/data/` (`write_held_out`), else, for a run written before those
    copies, its given files or its named corpus's (its training files are not needed).

    Raises:
        FileNotFoundError: naming a missing file (a held-out split not written yet).
        ValueError: naming a file that is not valid, or a split that an older run's
            `config.json` names by a relative path: which folder it meant is unknown.
    """
    from keras_attention.data.streaming import read_parallel

    languages = CorpusSpec(([], []), None, None, config.source_lang, config.target_lang)
    splits = {}
    for split in SPLIT_FILE_STEMS:
        copies = held_out_files(Path(output_dir), split, languages)
        if all(path.is_file() for path in copies):
            splits[split] = read_parallel(*copies)
    if len(splits) == len(SPLIT_FILE_STEMS):
        return splits
    if config.train is not None:
        for split, name in SPLIT_FILE_STEMS.items():
            given = getattr(config, name)
            if split in splits or given is None:
                continue
            relative = [path for path in given if not os.path.isabs(path)]
            if relative:
                raise ValueError(
                    f"{Path(output_dir) / 'config.json'} names the {name} files by relative "
                    f"paths ({', '.join(relative)}), and which folder they meant is unknown "
                    f"(the run keeps no copy in {DATA_FOLDER}/): give them to evaluate with "
                    "--source and --reference"
                )
        spec = CorpusSpec(
            ([], []),
            None if config.valid is None else ParallelFiles.from_patterns([config.valid], "valid"),
            None if config.test is None else ParallelFiles.from_patterns([config.test], "test"),
            config.source_lang,
            config.target_lang,
        )
    else:
        spec = corpus_spec(dataclasses.replace(config, train_pairs=0))
    for split, part in (("val", spec.valid), ("test", spec.test)):
        if split in splits:
            continue
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
