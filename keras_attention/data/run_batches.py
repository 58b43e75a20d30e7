"""A training run's batches from one small spec: `BatchingSpec` says how they are made (in
memory or streamed, by epochs or by rounds of steps, subword sampling, the workers, gradient
accumulation), `run_batches` makes them from the spec, the corpus and the tokenizer.

Training batch `e` (an epoch, or a round when training by steps) is a function of the run's
seed and `e` only (`epoch_seed`), so a resumed run trains on the batches of an uninterrupted
one; the validation and test batches are not shuffled.
"""

import dataclasses
import logging
import numbers
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from keras_attention.core.checks import check_int_at_least, check_positive_int, is_integer
from keras_attention.data.accumulation import token_weighted_updates
from keras_attention.data.corpus_files import ParallelFiles
from keras_attention.data.pipeline import EncodedPairs, encode_pairs, make_batches
from keras_attention.data.rounds import in_memory_rounds, stream_rounds
from keras_attention.data.streaming import shards_by_file, stream_batches
from keras_attention.data.subword_sampling import count_sampled_batches, sampled_batches
from keras_attention.data.tokenizer import SubwordTokenizer

logger = logging.getLogger(__name__)

SOURCES = ("memory", "stream")

Pairs = tuple[Sequence[str], Sequence[str]]


def epoch_seed(seed: int, epoch: int) -> int:
    """The shuffling seed of epoch (or round) `epoch`: a function of the run's seed and the
    epoch only, so that a resumed run trains on the batches of an uninterrupted one.

    >>> epoch_seed(0, 1) == epoch_seed(0, 1), epoch_seed(0, 1) == epoch_seed(0, 2)
    (True, False)
    """
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0] % 2**31)


@dataclasses.dataclass(frozen=True)
class BatchingSpec:
    """How a run's batches are made (`run_batches`); checked when made, each error naming
    the field at fault.

    Attributes:
        max_tokens: padded tokens per batch, at most.
        max_length: the longest sequence kept, in subword tokens (longer pairs are dropped).
        seed: the run's seed: training batch `e` is shuffled (and sampled) with
            `epoch_seed(seed, e)`.
        source: `"memory"`, the training pairs held in memory (`make_batches`), or
            `"stream"`, read from the training files as it trains (`stream_batches`).
        round_steps: train in rounds of this many steps, each a Keras epoch cut from the
            seeded passes (`data.rounds`); `None`: by epochs, a pass over the corpus each. A
            stream, whose length is unknown, needs it.
        accumulate_steps: batches per optimizer update; above 1 every batch carries its
            share of the update's target tokens (`token_weighted_updates`).
        subword_sampling: the smoothing exponent alpha of subword regularization, which
            samples every epoch's segmentation afresh (`sampled_batches`); `None` or 0: the
            best segmentation. Only for a corpus in memory.
        replicas: batch sizes are multiples of this (the strategy's replicas in sync).
        workers: the workers of the cluster that read the batches.
        worker: this worker's index, from 0.
        backup_every_steps: the steps between two backups within a round (`None`: at the
            round's end only); when the workers read a stream by file, it must fall between
            two batches, as a round's end must.

    >>> spec = BatchingSpec(max_tokens=2048, max_length=64, seed=1)
    >>> spec.source, spec.round_steps, spec.accumulate_steps
    ('memory', None, 1)
    >>> BatchingSpec(max_tokens=2048, max_length=64, source="stream")
    Traceback (most recent call last):
    ...
    ValueError: round_steps must be given for source='stream' (a stream has no known length, it trains by steps); got round_steps=None
    """  # noqa: E501

    max_tokens: int
    max_length: int
    seed: int = 0
    source: str = "memory"
    round_steps: int | None = None
    accumulate_steps: int = 1
    subword_sampling: float | None = None
    replicas: int = 1
    workers: int = 1
    worker: int = 0
    backup_every_steps: int | None = None

    def __post_init__(self):
        check_positive_int("max_tokens", self.max_tokens)
        check_positive_int("max_length", self.max_length)
        if not is_integer(self.seed):
            raise ValueError(f"seed must be an integer; got seed={self.seed!r}")
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}; got source={self.source!r}")
        check_positive_int("round_steps", self.round_steps, allow_none=True)
        if self.source == "stream" and self.round_steps is None:
            raise ValueError(
                "round_steps must be given for source='stream' (a stream has no known length, "
                "it trains by steps); got round_steps=None"
            )
        check_int_at_least("accumulate_steps", self.accumulate_steps, 1)
        if self.round_steps is not None and self.round_steps % self.accumulate_steps:
            raise ValueError(
                f"round_steps must be a multiple of accumulate_steps (whole updates); got "
                f"round_steps={self.round_steps}, accumulate_steps={self.accumulate_steps}"
            )
        self._check_subword_sampling()
        check_positive_int("replicas", self.replicas)
        check_positive_int("workers", self.workers)
        if not is_integer(self.worker) or not 0 <= self.worker < self.workers:
            raise ValueError(
                f"worker must be an integer in [0, workers={self.workers}); "
                f"got worker={self.worker!r}"
            )
        check_positive_int("backup_every_steps", self.backup_every_steps, allow_none=True)

    def _check_subword_sampling(self) -> None:
        alpha = self.subword_sampling
        if alpha is None:
            return
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha <= 1:
            raise ValueError(
                f"subword_sampling must be a number in [0, 1] (0: off); "
                f"got subword_sampling={alpha!r}"
            )
        if alpha and self.source == "stream":
            raise ValueError(
                f"subword_sampling needs source='memory'; got subword_sampling={alpha!r} "
                "with source='stream'"
            )


@dataclasses.dataclass
class RunData:
    """A run's corpus, tokenizer and batches (`run_batches`).

    Attributes:
        corpus: `{"train": (sources, targets), "val": ..., "test": ...}`.
        tokenizer: the run's tokenizer.
        train_batches: `epoch -> tf.data.Dataset` of that epoch's batches (of that round's,
            by steps), the same whenever asked for (see `fit_resumable`).
        val_batches: the validation batches.
        test_batches: the test batches.
        steps_per_batch: the training steps that each training batch makes: 1, or the
            number of workers when they read a streamed corpus by file (`stream_batches`).
        batches_per_epoch: the training batches of an epoch (of a round, by steps).
    """

    corpus: dict
    tokenizer: SubwordTokenizer
    train_batches: Callable[[int], tf.data.Dataset]
    val_batches: tf.data.Dataset
    test_batches: tf.data.Dataset
    steps_per_batch: int = 1
    batches_per_epoch: int = 0


def file_sharding(spec: BatchingSpec, num_shards: int) -> int:
    """The steps that each batch of a stream of `num_shards` shards makes: `spec.workers`
    when the workers read it by file (`shards_by_file`, without gradient accumulation, whose
    token weights need whole global batches), 1 otherwise.

    Raises:
        ValueError: by file, if the steps of a round or between backups are not a multiple of
            the workers (a round must end, and a backup stand, between two batches).
    """
    workers = spec.workers
    if spec.accumulate_steps > 1 or not shards_by_file(num_shards, workers):
        return 1
    for name, value in (
        ("round_steps", spec.round_steps),
        ("backup_every_steps", spec.backup_every_steps),
    ):
        if value is not None and value % workers:
            setting = " (a run's save_every_steps)" if name == "round_steps" else ""
            raise ValueError(
                f"{name}={value}{setting} must be a multiple of the {workers} workers: they "
                f"read the {num_shards} shards by file, each of a worker's batches making "
                f"{workers} steps"
            )
    return workers


def _encode_splits(
    spec: BatchingSpec, tokenizer: SubwordTokenizer, splits: dict
) -> dict[str, EncodedPairs]:
    """The splits in memory, encoded (the training split too unless it is streamed)."""
    encoded = {}
    for split, (sources, targets) in splits.items():
        if split == "train" and spec.source == "stream":
            continue
        encoded[split] = encode_pairs(tokenizer, sources, targets, max_length=spec.max_length)
        logger.info(
            "%s: %d pairs kept of %d", split, encoded[split].num_pairs, encoded[split].num_read
        )
    if spec.source == "memory" and not encoded["train"].num_pairs:
        raise ValueError(
            f"no training pair is at most max_length={spec.max_length} tokens long "
            f"(of {encoded['train'].num_read})"
        )
    return encoded


def _in_memory_epochs(
    spec: BatchingSpec, tokenizer: SubwordTokenizer, pairs: Pairs, encoded: EncodedPairs
) -> Callable[[int], tf.data.Dataset]:
    """`epoch -> tf.data.Dataset` of the training batches of a corpus in memory: the pairs
    encoded once (`encoded`), or sampled afresh every epoch (`spec.subword_sampling`),
    shuffled with the epoch's seed."""
    sizes = dict(
        max_tokens=spec.max_tokens, max_length=spec.max_length, batch_multiple=spec.replicas
    )
    if not spec.subword_sampling:

        def encoded_epoch(number: int) -> tf.data.Dataset:
            seed = epoch_seed(spec.seed, number)
            return make_batches(encoded, **sizes, shuffle=True, seed=seed)

        return encoded_epoch
    arguments = (tokenizer, *pairs, spec.subword_sampling)
    # Every epoch as long as the first's sampling (they differ by a few batches).
    first_seed = epoch_seed(spec.seed, 0)
    num_batches = count_sampled_batches(*arguments, first_seed, **sizes)
    logger.info(
        "subword sampling (alpha %s): %d batches an epoch", spec.subword_sampling, num_batches
    )

    def sampled_epoch(number: int) -> tf.data.Dataset:
        seed = epoch_seed(spec.seed, number)
        return sampled_batches(*arguments, seed, num_batches, **sizes)

    return sampled_epoch


def _stream_rounds(
    spec: BatchingSpec,
    tokenizer: SubwordTokenizer,
    train_files: ParallelFiles,
    steps_per_batch: int,
    exclude_sources: Sequence[str],
) -> Callable[[int], tf.data.Dataset]:
    """`round -> tf.data.Dataset` of a stream's batches: the start of the stream shuffled
    with the round's seed, each worker reading its own shards when `steps_per_batch > 1`."""

    def stream(number: int) -> tf.data.Dataset:
        seed = epoch_seed(spec.seed, number)
        return stream_batches(
            train_files.sources,
            train_files.targets,
            tokenizer,
            max_tokens=spec.max_tokens,
            max_length=spec.max_length,
            batch_multiple=spec.replicas,
            seed=seed,
            workers=steps_per_batch,
            worker=spec.worker if steps_per_batch > 1 else 0,
            exclude_sources=exclude_sources,
        )

    return stream_rounds(stream, spec.round_steps // steps_per_batch)


def run_batches(
    spec: BatchingSpec,
    tokenizer: SubwordTokenizer,
    splits: dict,
    train_files: ParallelFiles | None = None,
    exclude_sources: Sequence[str] = (),
) -> RunData:
    """A run's training, validation and test batches, made as `spec` says.

    Args:
        spec: how the batches are made.
        tokenizer: the run's tokenizer.
        splits: `{"train": (sources, targets), "val": ..., "test": ...}` in memory (the
            training pairs are not read when `spec.source` is `"stream"`).
        train_files: the training files, for `spec.source="stream"` (only then).
        exclude_sources: sources whose pairs a stream leaves out as it reads (the
            validation and test sources).

    Returns:
        A `RunData`: `train_batches(e)` for each epoch (round) `e`, the validation and test
        batches, `steps_per_batch` and `batches_per_epoch`.

    Raises:
        ValueError: if no training pair fits `spec.max_length`, if an epoch has fewer batches
            than `spec.accumulate_steps`, if `train_files` does not go with `spec.source`, or
            if a round or backup falls inside a batch of workers reading by file
            (`file_sharding`).

    >>> from keras_attention.data.generated_corpus import generate_pairs
    >>> pairs = generate_pairs(200, seed=0)
    >>> texts = [text for pair in pairs for text in pair]
    >>> tokenizer = SubwordTokenizer.train(texts, vocabulary_size=200)
    >>> splits = {name: ([en for en, _ in pairs], [de for _, de in pairs])
    ...           for name in ("train", "val", "test")}
    >>> spec = BatchingSpec(max_tokens=512, max_length=32, seed=1, round_steps=4)
    >>> data = run_batches(spec, tokenizer, splits)
    >>> data.batches_per_epoch, int(data.train_batches(7).cardinality())
    (4, 4)
    """
    streamed = spec.source == "stream"
    if streamed != (train_files is not None):
        raise ValueError(
            f"train_files must be given exactly when source='stream'; got source="
            f"{spec.source!r} and train_files={train_files!r}"
        )
    # The workers reading their own shards: each batch makes this many steps.
    steps_per_batch = file_sharding(spec, len(train_files.sources)) if streamed else 1
    encoded = _encode_splits(spec, tokenizer, splits)

    def batches(split: str, seed: int) -> tf.data.Dataset:
        return make_batches(
            encoded[split],
            max_tokens=spec.max_tokens,
            max_length=spec.max_length,
            batch_multiple=spec.replicas,
            shuffle=False,
            seed=seed,
        )

    if streamed:
        rounds = _stream_rounds(spec, tokenizer, train_files, steps_per_batch, exclude_sources)
    else:
        rounds = _in_memory_epochs(spec, tokenizer, splits["train"], encoded["train"])
        if spec.round_steps is not None:
            per_epoch = int(rounds(0).cardinality())
            rounds = in_memory_rounds(rounds, per_epoch, spec.round_steps)

    def train_batches(epoch: int) -> tf.data.Dataset:
        epoch_data = rounds(epoch)
        if spec.accumulate_steps > 1:
            epoch_data = token_weighted_updates(epoch_data, spec.accumulate_steps)
        return epoch_data

    batches_per_epoch = int(train_batches(0).cardinality())
    if batches_per_epoch == 0:
        raise ValueError(
            f"accumulate_steps={spec.accumulate_steps} is more than the "
            f"{int(batches('train', 0).cardinality())} batches of an epoch"
        )
    return RunData(
        splits,
        tokenizer,
        train_batches,
        batches("val", spec.seed),
        batches("test", spec.seed),
        steps_per_batch=steps_per_batch,
        batches_per_epoch=batches_per_epoch,
    )
