"""Everything a training run needs, checked before anything is written: settings, corpus,
tokenizer, batches, strategy and the run's folder (`prepare_run`).
"""

import contextlib
import dataclasses
import json
import logging
import tempfile
from pathlib import Path

import keras

from keras_attention.core.atomic_files import write_bytes_atomically, write_json_atomically
from keras_attention.data.run_batches import BatchingSpec, RunData, run_batches
from keras_attention.data.streaming import parallel_text
from keras_attention.data.tokenizer import SubwordTokenizer, recaser_path
from keras_attention.distribute import get_strategy
from keras_attention.distribute.cluster import barrier, is_chief, read_tf_config
from keras_attention.models import Transformer
from keras_attention.models.model_sizes import check_model_config
from keras_attention.models.presets import preset_config
from keras_attention.models.run_folder import (
    check_tokenizer_fits,
    load_run_tokenizer,
    tokenizer_file_digests,
)
from keras_attention.runs import fine_tune
from keras_attention.runs.config import MIXED_PRECISION_POLICIES, TrainConfig
from keras_attention.runs.corpus import (
    RunCorpus,
    corpus_spec,
    load_run_corpus,
    write_held_out,
)
from keras_attention.runs.corpus_fingerprint import (
    check_fingerprint,
    corpus_fingerprint,
    write_fingerprint,
)
from keras_attention.runs.files import check_run_files
from keras_attention.runs.folder import (
    SEARCH_SETTINGS,
    config_differences,
    inspect_run_folder,
    remove_run_files,
    remove_temporary_files,
)
from keras_attention.runs.run_lock import RunLock, lock_run_folder
from keras_attention.runs.settings_report import settings_lines

logger = logging.getLogger(__name__)


def _check_model_overrides(config: "TrainConfig") -> None:
    """Raises `ValueError` if the preset's model cannot be made with `model_overrides`
    (constructed without weights, outside any strategy, before the run's seed is set)."""
    try:
        settings = preset_config(config.preset, **config.model_overrides)
        if config.init_from is not None:  # the parent's weights must hold such a model
            parent = Path(config.init_from)
            sizes = {**settings, "vocabulary_size": config.vocabulary_size}
            check_model_config(sizes, parent / "config.json", parent / "model.keras")
        Transformer(config.vocabulary_size, **settings, name="model_overrides_check")
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"model_overrides={json.dumps(config.model_overrides)} do not make a "
            f"{config.preset!r} Transformer: {error}"
        ) from None


TOKENIZER_SAMPLE = 100_000  # pairs of a streamed corpus that the tokenizer learns from


def _tokenizer_texts(run_corpus: RunCorpus) -> tuple[list[str], list[str]]:
    """The sources and targets the run's tokenizer learns from: the training split, or the
    first `TOKENIZER_SAMPLE` pairs of a streamed corpus's shards (read interleaved: a sample
    of several shards, in a time that does not grow with the corpus)."""
    files = run_corpus.train_files
    if files is None:
        return run_corpus.corpus["train"]
    sample = parallel_text(files.sources, files.targets).take(TOKENIZER_SAMPLE)
    pairs = [[text.decode("utf-8") for text in pair] for pair in sample.as_numpy_iterator()]
    return [source for source, _ in pairs], [target for _, target in pairs]


def _train_tokenizer(config: "TrainConfig", run_corpus: RunCorpus) -> SubwordTokenizer:
    """The run's new tokenizer; a lowercasing one, with a recaser learned from the training
    targets, if `config.lowercase`."""
    sources, targets = _tokenizer_texts(run_corpus)
    return SubwordTokenizer.train(
        sources + targets,
        config.vocabulary_size,
        recase_texts=targets if config.lowercase else None,
    )


def _load_tokenizer(config: "TrainConfig", path: Path) -> SubwordTokenizer:
    """The tokenizer a run saved; `ValueError` naming the file if it is corrupt, if its
    vocabulary is not the run's, or if it lowercases and the run does not (or the other way
    round: its recaser file is gone)."""
    tokenizer = load_run_tokenizer(path.parent)  # a `CorruptFileError` names a damaged file
    owner = f"the run's vocabulary_size in {path.parent / 'config.json'}"
    check_tokenizer_fits(path, tokenizer.vocabulary_size, config.vocabulary_size, owner)
    if tokenizer.lowercase != config.lowercase:
        raise ValueError(
            f"{path} {'lowercases' if tokenizer.lowercase else 'keeps the case'} but the run "
            f"has lowercase={config.lowercase} (its recaser file, {recaser_path(path).name}, "
            f"{'is there' if tokenizer.lowercase else 'is missing'})"
        )
    return tokenizer


def _keep_started_precision(config: TrainConfig, output_dir: Path) -> TrainConfig:
    """`config` with the precision of the run that `output_dir` holds, if it is this run
    started on a machine where the recipe's precision was another (`for_this_machine`)."""
    try:
        saved = json.loads((output_dir / "config.json").read_text())
        precision = saved["mixed_precision"]
    except (OSError, ValueError, KeyError, TypeError):
        return config
    if precision == config.mixed_precision or precision not in MIXED_PRECISION_POLICIES:
        return config
    started = dataclasses.replace(config, mixed_precision=precision)
    return started if not config_differences(saved, started, SEARCH_SETTINGS) else config


def tokenizer_metadata(config: "TrainConfig") -> dict:
    """What `tokenizer.json` records beside `tokenizer.model`: the languages and how the
    tokenizer treats case."""
    return {
        "source_language": config.source_lang,
        "target_language": config.target_lang,
        "vocabulary_size": config.vocabulary_size,
        "lowercase": config.lowercase,
        "model_type": "unigram",
    }


def batching_spec(
    config: TrainConfig, streamed: bool, replicas: int, worker: tuple[int, int]
) -> BatchingSpec:
    """How the run's batches are made (`data.run_batches`), from its resolved settings:
    `streamed` training files, `replicas` in sync, `worker` as `(workers, its index)`."""
    by_steps = config.train_steps is not None
    return BatchingSpec(
        max_tokens=config.max_tokens,
        max_length=config.max_length,
        seed=config.seed,
        source="stream" if streamed else "memory",
        round_steps=config.save_every_steps if by_steps else None,
        accumulate_steps=config.accumulate_steps,
        subword_sampling=config.subword_sampling,
        replicas=replicas,
        workers=worker[0],
        worker=worker[1],
        backup_every_steps=config.backup_every_steps,
    )


@dataclasses.dataclass
class PreparedRun:
    """A run whose settings, data and folder were checked, ready to train
    (`prepare_run`).

    Attributes:
        config: the settings (dataset defaults filled in).
        strategy: the `tf.distribute.Strategy`.
        output_dir: the run's folder.
        write_dir: the folder this process writes (`output_dir` on the chief).
        is_chief: whether this process writes `output_dir`.
        data: the corpus, tokenizer and batches.
        settings: the corpus and the chosen settings, one short line each
            (`settings_lines`).
        lock: the chief's lock of `output_dir` (`lock_run_folder`), held while this object
            lives; `None` on the other workers.
    """

    config: TrainConfig
    strategy: object
    output_dir: Path
    write_dir: Path
    is_chief: bool
    data: RunData
    settings: list[str] = dataclasses.field(default_factory=list)
    lock: RunLock | None = dataclasses.field(default=None, repr=False)


def prepare_run(config: TrainConfig, overwrite: bool = False) -> PreparedRun:
    """Checks everything a run needs, then writes its `config.json` and `tokenizer.model`.

    First of all, the process that writes the output folder (the chief, in a multi-worker
    cluster) locks it (`lock_run_folder`): a second run on the folder is refused before any
    work, the lock is held while the returned `PreparedRun` lives. Everything that can be
    wrong with the settings, the corpus or the output folder is then found before anything
    is written, so a start that fails leaves nothing that a later run would pick up (nor the
    folder, if the lock created it): settings (`TrainConfig.validate`, the model's
    overrides), the folder (`inspect_run_folder`: another run's folder is refused unless
    `overwrite`), the corpus (a resumed run's files must be those it started with, by
    content: `corpus_fingerprint`), the tokenizer (learned in memory, or the saved one when
    resuming), the files a resumed run goes on from (`check_run_files`: a damaged backup
    copy or checkpoint is recovered from the other copy, or refused) and the batches.

    Args:
        config: the run's settings.
        overwrite: remove the files of a run already in `config.output_dir` and start afresh.

    Returns:
        A `PreparedRun`, for `train_prepared`.

    Raises:
        RunFolderInUseError: another process holds the output folder's lock (naming it).
        ValueError: naming the setting, file or folder at fault.
        OSError: a corpus file cannot be read, or the output folder cannot be created (it
            is a file, say).
    """
    output_dir = Path(config.output_dir)
    created = _missing_folders(output_dir)
    cluster = read_tf_config()  # the chief as `is_chief` will find it, before the strategy
    lock = lock_run_folder(output_dir) if cluster is None or cluster.is_chief else None
    try:
        run = _prepare_run(config, overwrite)
    except BaseException:
        del lock  # released unless another `PreparedRun` of this process holds it
        for folder in created:
            with contextlib.suppress(OSError):  # not empty: the start wrote before it failed
                folder.rmdir()
        raise
    run.lock = lock
    return run


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and its missing parents, deepest first, if `folder` does not exist."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _prepare_run(config: TrainConfig, overwrite: bool) -> PreparedRun:
    """`prepare_run` once the output folder is locked."""
    config = config.with_absolute_paths()  # config.json means the same from any folder
    given = config
    spec = corpus_spec(config)  # files named but missing fail here, before TensorFlow runs
    # Before TensorFlow runs any op: a multi-worker strategy must exist first.
    strategy = get_strategy(config.devices, config.connect_timeout)
    run_corpus = load_run_corpus(config, spec)
    config = dataclasses.replace(
        config.resolved(run_corpus.stats),
        source_lang=spec.source_lang,
        target_lang=spec.target_lang,
    )
    if config.init_from is not None:
        if Path(config.init_from).resolve() == Path(config.output_dir).resolve():
            raise ValueError(
                f"output_dir={config.output_dir} is the run of init_from: a fine-tuned run "
                "needs a folder of its own"
            )
        parent = fine_tune.parent_settings(config.init_from)
        as_given = dataclasses.asdict(given) | {
            "source_lang": spec.source_lang,
            "target_lang": spec.target_lang,
        }
        fine_tune.check_child(as_given, parent, config.init_from, config.force_language_pair)
    output_dir = Path(config.output_dir)
    if given.mixed_precision is None:
        config = _keep_started_precision(config, output_dir)
    config.validate()
    _check_model_overrides(config)
    chief = is_chief(strategy)
    resuming = inspect_run_folder(output_dir, config, overwrite)
    fingerprint = corpus_fingerprint(spec) if chief else None
    if resuming and chief:  # the files it started with (corpus.json), or a refusal
        check_fingerprint(output_dir, fingerprint)
    keras.utils.set_random_seed(config.seed)
    tokenizer_path = output_dir / "tokenizer.model"
    cluster = read_tf_config()
    worker = (cluster.num_workers, cluster.worker_index) if cluster is not None else (1, 0)
    streamed = run_corpus.train_files is not None
    batching = batching_spec(config, streamed, strategy.num_replicas_in_sync, worker)
    corpus = dict(
        splits=run_corpus.corpus,
        train_files=run_corpus.train_files,
        exclude_sources=run_corpus.excluded_sources,
    )
    data = None
    if chief:
        if resuming and tokenizer_path.is_file():
            tokenizer = _load_tokenizer(config, tokenizer_path)
            # The files it goes on from; this may build a model, so the seed is set again.
            check_run_files(output_dir, tokenizer)
            keras.utils.set_random_seed(config.seed)
        elif config.init_from is not None:
            tokenizer = load_run_tokenizer(config.init_from)  # the parent's, checked
        else:
            tokenizer = _train_tokenizer(config, run_corpus)
        data = run_batches(batching, tokenizer, **corpus)
        # Everything checked: the run's folder is written from here on.
        if overwrite and output_dir.is_dir():
            remove_run_files(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        remove_temporary_files(output_dir)
        write_held_out(output_dir, run_corpus)
        write_fingerprint(output_dir, fingerprint)
        # A resumed run may have new search settings (`SEARCH_SETTINGS`), kept for the
        # tools that read them (`run_beam_search`).
        write_json_atomically(output_dir / "config.json", dataclasses.asdict(config))
        if not tokenizer_path.is_file() and config.init_from is not None:
            # The parent's files byte for byte: its ensembles and comparisons need them so.
            for file in fine_tune.tokenizer_files(config.init_from):
                write_bytes_atomically(output_dir / file.name, file.read_bytes())
            write_json_atomically(
                output_dir / fine_tune.STARTED_FROM_FILE, fine_tune.started_from(config.init_from)
            )
        if not tokenizer_path.is_file():
            tokenizer.save(tokenizer_path)
        # With the digests of the tokenizer's files, checked whenever they are read.
        digests = {"files": tokenizer_file_digests(output_dir)}
        write_json_atomically(output_dir / "tokenizer.json", tokenizer_metadata(config) | digests)
    barrier(strategy)  # the other workers read the chief's tokenizer
    if not chief:
        tokenizer = _load_tokenizer(config, tokenizer_path)
        data = run_batches(batching, tokenizer, **corpus)
    write_dir = output_dir
    if not chief:
        write_dir = Path(tempfile.mkdtemp(prefix="keras-attention-worker-"))
        write_json_atomically(write_dir / "config.json", dataclasses.asdict(config))
    lines = settings_lines(given, config, run_corpus)
    return PreparedRun(config, strategy, output_dir, write_dir, chief, data, lines)
