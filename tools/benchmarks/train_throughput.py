"""Training throughput of our Transformer against a keras-hub peer of the same size.

What is measured (`python tools/benchmark.py train`): non-padding target tokens per second
of a training step (`train_on_batch`: forward, label-smoothed loss, backward, Adam update) on
Multi30k English-German, for

- our `Transformer` and the keras-hub peer (`peer_models.build_keras_hub_transformer`) on
  **identical batches**: the very same list of our bucketed batches fed to both, so that only
  the model differs;
- each side with its **natural batching** (end to end): ours batched by tokens in length
  buckets (`make_batches`), the peer in fixed-size batches padded to one fixed length, as the
  keras-hub examples batch; both over exactly the same sentence pairs;

each with and without XLA (`jit_compile`). Both models get the same loss
(`LabelSmoothedCrossEntropy(0.1)`), the same optimizer (`paper_optimizer`) and no metrics.

Timing: every distinct batch shape is run once first (tracing and, with XLA, compilation:
reported as `warmup_s`), then every configuration runs its whole list of batches once per
round, the configurations interleaved within a round, and the fastest round counts (on a
shared machine other processes only slow a round down). Model FLOPs utilisation is the
configuration's training FLOP/s (`timing.training_flops` over the padded batch shapes) over a
`tf.matmul` float32 peak measured in the same run (before the first round and after each; the
best counts).

Choices:

- Timed batches: the first `steps` batches of a shuffled epoch of `make_batches` over all
  29,000 pairs. Its batch shuffle holds 64 batches, so these are full batches drawn from the
  common buckets (lengths 16, 24, 32 for Multi30k): a few shapes, so a few XLA compilations,
  and the padding of a real epoch (each bucket's last, partly empty batch is 1 batch in
  about 20).
- Ours: `max_tokens=4096`, the library's training default. On the 2-core machine, batches
  of 2k, 4k and 8k tokens trained within the noise of one another, with and without XLA
  (1,500-2,100 target tokens/s); below about 1k tokens the matrix units are underused
  (measured by this benchmark). Sweep `--max-tokens` on a quiet machine to refine.
- The peer: batches of 64 sentences (the keras-hub examples' batch size) padded to the
  longest pair read (56 subword tokens for Multi30k train with `max_length=64`), so that no
  pair is cut: a fixed-length pipeline must pad every batch to what its longest sentence
  needs. `--peer-length 40` gives the keras.io translation example's fixed length instead.
"""

import dataclasses
import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from keras_attention.data import (
    PAD_ID,
    EncodedPairs,
    SubwordTokenizer,
    encode_pairs,
    load_multi30k,
    make_batches,
)
from keras_attention.models import Transformer
from keras_attention.models.presets import preset_config
from keras_attention.training import LabelSmoothedCrossEntropy, paper_optimizer

from .peer_models import peer_from_preset
from .timing import (
    Stopwatch,
    TransformerDims,
    matmul_peak_gflops,
    summarize_rounds,
    training_flops,
)

logger = logging.getLogger(__name__)

# The Multi30k folder when no data_dir is given: `$KERAS_ATTENTION_MULTI30K` (which `.ci/run`
# sets), so that nothing here names a path outside the repository.
_ENV_DATA_DIR = os.environ.get("KERAS_ATTENTION_MULTI30K")
DEFAULT_DATA_DIR = Path(_ENV_DATA_DIR) if _ENV_DATA_DIR else None

# A batch: int32 `(source, target_in, target_out)`, each `(batch, length)`.
Batch = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclasses.dataclass
class TrainBenchmarkConfig:
    """Settings of the training-throughput benchmark.

    Attributes:
        preset: our model's preset; the peer copies its sizes and dropout.
        model_overrides: constructor arguments replacing the preset's (both models).
        pairs: the first `pairs` Multi30k training pairs are batched (`None`: all 29,000).
            The pool costs no timing (`steps` bounds it); it sets the peer's fixed length
            (the longest pair) and which batches come first.
        steps: our batches timed per configuration and round: the first `steps` of a
            shuffled epoch (`None`: the whole epoch).
        rounds: timed repetitions; the fastest counts.
        max_tokens: padded tokens per batch of our bucketed batching.
        max_length: longest pair kept, in subword tokens (bucket lengths go up to it).
        length_multiple: our padded lengths are multiples of this.
        peer_batch_size: sentences per batch of the peer's fixed batching.
        peer_length: the peer's fixed padded length (`None`: the longest pair read, so that
            no pair is cut, as a fixed-length pipeline must pad).
        jit_modes: which of `jit_compile=True` / `False` to run.
        vocabulary_size: SentencePiece vocabulary, learned on the whole training split.
        data_dir: the Multi30k folder.
        cache_dir: where the learned SentencePiece model is cached (`None`: a folder in
            the system's temporary directory).
        matmul_size: side of the square `tf.matmul` that measures the peak.
        seed: seed of the shuffling, the weights and the dropout.
    """

    preset: str = "small"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    pairs: int | None = None
    steps: int | None = 6
    rounds: int = 3
    max_tokens: int = 4096
    max_length: int = 64
    length_multiple: int = 8
    peer_batch_size: int = 64
    peer_length: int | None = None
    jit_modes: tuple[bool, ...] = (True, False)
    vocabulary_size: int = 8000
    data_dir: str | None = None
    cache_dir: str | None = None
    matmul_size: int = 2048
    seed: int = 1234


def quick_config(**changes) -> TrainBenchmarkConfig:
    """Tiny settings for a smoke run (about a minute on 2 CPU cores).

    Example:

    >>> result = run_train_benchmark(quick_config(jit_modes=(False,)))
    """
    if "preset" in changes:  # a chosen preset keeps its own sizes
        changes.setdefault("model_overrides", {})
    settings = dict(
        preset="tiny",
        model_overrides=dict(
            num_encoder_layers=1, num_decoder_layers=1, d_model=64, intermediate_dim=128
        ),
        pairs=300,
        steps=3,
        rounds=2,
        max_tokens=512,
        max_length=32,
        length_multiple=32,  # one bucket shape: one compilation per model
        peer_batch_size=24,
        vocabulary_size=1000,
        matmul_size=512,
    )
    settings.update(changes)
    return TrainBenchmarkConfig(**settings)


@dataclasses.dataclass
class BenchmarkBatches:
    """The batches both models are timed on.

    Attributes:
        ours: our bucketed batches (the identical-batches runs feed these to both models).
        peer: the same sentence pairs in the peer's fixed-size, fixed-length batches.
        peer_length: the peer's fixed padded length.
        pairs_read: pairs read from Multi30k.
        pairs_timed: real pairs in `ours` (and in `peer`).
    """

    ours: list[Batch]
    peer: list[Batch]
    peer_length: int
    pairs_read: int
    pairs_timed: int


@dataclasses.dataclass
class RunSpec:
    """One timed configuration: which model, which batching, XLA or not."""

    model: str  # "ours" or "peer"
    batching: str  # "bucketed" or "fixed"
    jit: bool

    @property
    def name(self) -> str:
        """E.g. `"ours/bucketed/jit"`."""
        return f"{self.model}/{self.batching}/{'jit' if self.jit else 'no-jit'}"


def cached_tokenizer(
    texts: Sequence[str], vocabulary_size: int, cache_dir: str | Path | None = None
) -> SubwordTokenizer:
    """Learns a SentencePiece model from `texts`, or loads the one cached for them.

    The cache key is a hash of the texts and the vocabulary size, so a changed corpus is
    never served a stale model.
    """
    folder = Path(cache_dir or Path(tempfile.gettempdir()) / "keras_attention_benchmarks")
    digest = hashlib.sha1("\n".join(texts).encode("utf-8")).hexdigest()[:12]
    path = folder / f"sentencepiece_{vocabulary_size}_{digest}.model"
    if path.is_file():
        return SubwordTokenizer.load(path)
    tokenizer = SubwordTokenizer.train(texts, vocabulary_size)
    tokenizer.save(path)
    return tokenizer


def bucketed_batches(encoded: EncodedPairs, config: TrainBenchmarkConfig) -> list[Batch]:
    """Our natural batching: `make_batches` by tokens in length buckets, one pass, as NumPy.

    Returns:
        The first `config.steps` batches (all when `steps` is `None`).
    """
    dataset = make_batches(
        encoded,
        max_tokens=config.max_tokens,
        max_length=config.max_length,
        length_multiple=config.length_multiple,
        shuffle=True,
        seed=config.seed,
    )
    if config.steps is not None:
        dataset = dataset.take(config.steps)
    return [
        (source, target_in, target_out)
        for (source, target_in), target_out in dataset.as_numpy_iterator()
    ]


def fixed_length_batches(
    batches: Sequence[Batch], batch_size: int, length: int, seed: int = 0
) -> list[Batch]:
    """The peer's natural batching of the pairs in `batches`: `batch_size` x `length`.

    The real rows (those with a target token) of `batches` are shuffled, padded to `length`
    and cut into batches of `batch_size`; the last batch is completed with all-padding rows
    (the loss ignores them) so that the peer sees a single shape, as with a fixed
    `sequence_length` in the keras-hub examples.

    Raises:
        ValueError: when a pair is longer than `length`.
    """
    rows = [[], [], []]
    for batch in batches:
        real = np.any(batch[2] != PAD_ID, axis=1)
        for column, array in zip(rows, batch, strict=True):
            if np.any(array[:, length:] != PAD_ID):
                raise ValueError(
                    f"length must cover every pair; got length={length} for pairs of up to "
                    f"{int(np.max(np.sum(array != PAD_ID, axis=1)))} tokens"
                )
            array = array[real, :length]
            column.append(np.pad(array, [(0, 0), (0, length - array.shape[1])]))
    columns = [np.concatenate(column) for column in rows]
    order = np.random.default_rng(seed).permutation(len(columns[0]))
    columns = [column[order] for column in columns]
    missing = -len(order) % batch_size
    columns = [np.pad(column, [(0, missing), (0, 0)]) for column in columns]
    return [
        tuple(column[start : start + batch_size] for column in columns)
        for start in range(0, len(columns[0]), batch_size)
    ]


def prepare_batches(config: TrainBenchmarkConfig) -> BenchmarkBatches:
    """Reads Multi30k, learns (or loads) the tokenizer and builds both sides' batches.

    Multi30k is read from `config.data_dir`, else from `$KERAS_ATTENTION_MULTI30K`, else
    downloaded once by `load_multi30k`.
    """
    data_dir = config.data_dir or DEFAULT_DATA_DIR
    splits = load_multi30k(data_dir)
    sources, targets = splits["train"]
    tokenizer = cached_tokenizer(sources + targets, config.vocabulary_size, config.cache_dir)
    encoded = encode_pairs(
        tokenizer, sources[: config.pairs], targets[: config.pairs], max_length=config.max_length
    )
    ours = bucketed_batches(encoded, config)
    peer_length = config.peer_length or int(encoded.lengths().max())
    peer = fixed_length_batches(ours, config.peer_batch_size, peer_length, config.seed)
    return BenchmarkBatches(
        ours=ours,
        peer=peer,
        peer_length=peer_length,
        pairs_read=encoded.num_read,
        pairs_timed=sum(int(np.any(b[2] != PAD_ID, axis=1).sum()) for b in ours),
    )


def build_model(
    kind: str, config: TrainBenchmarkConfig, vocabulary_size: int, sequence_length: int, jit: bool
) -> keras.Model:
    """Our `Transformer` (`kind="ours"`) or the keras-hub peer, compiled for training.

    Both get the paper's optimizer and our label-smoothed loss, and no metrics, so that only
    the model differs.
    """
    overrides = config.model_overrides
    if kind == "ours":
        model = Transformer.from_preset(config.preset, vocabulary_size, **overrides)
    else:
        model = peer_from_preset(config.preset, vocabulary_size, sequence_length, **overrides)
    d_model = preset_config(config.preset, **overrides)["d_model"]
    model.compile(
        optimizer=paper_optimizer(d_model),
        loss=LabelSmoothedCrossEntropy(label_smoothing=0.1, pad_id=PAD_ID),
        jit_compile=jit,
    )
    return model


def _to_tensors(batches: Sequence[Batch]) -> list[tuple[tf.Tensor, ...]]:
    return [tuple(tf.constant(array, tf.int32) for array in batch) for batch in batches]


def train_steps(model: keras.Model, batches: Sequence[tuple[tf.Tensor, ...]]) -> float:
    """Runs one `train_on_batch` per batch; returns the seconds they took."""
    with Stopwatch() as watch:
        for source, target_in, target_out in batches:
            model.train_on_batch((source, target_in), target_out)
    return watch.seconds


def warm_up(model: keras.Model, batches: Sequence[tuple[tf.Tensor, ...]]) -> float:
    """Runs one training step per distinct batch shape (tracing, XLA compilation).

    Returns:
        The seconds taken (first steps included).
    """
    first_of_shape = {}
    for batch in batches:
        first_of_shape.setdefault(tuple(batch[0].shape) + tuple(batch[1].shape), batch)
    return train_steps(model, list(first_of_shape.values()))


def batch_statistics(batches: Sequence[Batch], dims: TransformerDims) -> dict:
    """Target tokens (real and padded), distinct shapes and training FLOPs of `batches`."""
    return {
        "steps": len(batches),
        "target_tokens": int(sum(np.count_nonzero(b[2] != PAD_ID) for b in batches)),
        "padded_target_tokens": int(sum(b[2].size for b in batches)),
        "shapes": sorted({(int(b[0].shape[0]), int(b[0].shape[1])) for b in batches}),
        "training_flops": sum(
            training_flops(dims, b[0].shape[0], b[0].shape[1], b[1].shape[1]) for b in batches
        ),
    }


def run_result(spec: RunSpec, stats: dict, seconds: list[float], warmup: float, peak: float):
    """The result of one configuration: throughput, MFU and timings."""
    timing = summarize_rounds(seconds)
    achieved = stats["training_flops"] / timing["best"] / 1e9
    return {
        "name": spec.name,
        "model": spec.model,
        "batching": spec.batching,
        "jit": spec.jit,
        **{key: value for key, value in stats.items() if key != "shapes"},
        "shapes": [list(shape) for shape in stats["shapes"]],
        "padding_fraction": 1.0 - stats["target_tokens"] / stats["padded_target_tokens"],
        "warmup_s": warmup,
        "round_s": seconds,
        "best_s": timing["best"],
        "median_s": timing["median"],
        "tokens_per_second": stats["target_tokens"] / timing["best"],
        "model_gflops": achieved,
        "mfu": achieved / peak,
    }


def compare(runs: dict[str, dict], jit_modes: Sequence[bool]) -> list[dict]:
    """Ours over the peer: on identical batches, and end to end (natural batching)."""
    ratios = []
    for jit in jit_modes:
        mode = "jit" if jit else "no-jit"
        for label, peer_batching, target in (
            ("identical batches", "bucketed", 1.0),
            ("end to end", "fixed", 1.5),
        ):
            ours = runs[f"ours/bucketed/{mode}"]["tokens_per_second"]
            peer = runs[f"peer/{peer_batching}/{mode}"]["tokens_per_second"]
            ratios.append(
                {
                    "comparison": label,
                    "jit": jit,
                    "ours_tokens_per_second": ours,
                    "peer_tokens_per_second": peer,
                    "ratio": ours / peer,
                    "target": target,
                    "met": ours / peer >= target,
                }
            )
    return ratios


def model_dims(config: TrainBenchmarkConfig, vocabulary_size: int) -> TransformerDims:
    """The FLOP-relevant sizes of the preset with its overrides."""
    sizes = preset_config(config.preset, **config.model_overrides)
    return TransformerDims(
        num_encoder_layers=sizes["num_encoder_layers"],
        num_decoder_layers=sizes["num_decoder_layers"],
        d_model=sizes["d_model"],
        intermediate_dim=sizes["intermediate_dim"],
        vocabulary_size=vocabulary_size,
    )


def run_specs(jit_modes: Sequence[bool]) -> list[RunSpec]:
    """The timed configurations, XLA mode by XLA mode."""
    return [
        RunSpec(model, batching, jit)
        for jit in jit_modes
        for model, batching in (("ours", "bucketed"), ("peer", "bucketed"), ("peer", "fixed"))
    ]


def time_rounds(
    specs: Sequence[RunSpec],
    models: dict,
    batches: dict[str, list],
    rounds: int,
    matmul_size: int,
) -> tuple[dict[str, list[float]], list[float]]:
    """Times every configuration once per round, interleaved, and the matmul peak per round.

    Returns:
        `(seconds, peaks)`: per configuration name the seconds of each round, and the
        `tf.matmul` peaks (GFLOP/s) measured before the first round and after each round.
    """
    seconds = {spec.name: [] for spec in specs}
    peaks = [matmul_peak_gflops(matmul_size)]
    for round_index in range(rounds):
        for spec in specs:
            elapsed = train_steps(models[spec.model, spec.jit], batches[spec.batching])
            seconds[spec.name].append(elapsed)
            logger.info("round %d, %s: %.2f s", round_index + 1, spec.name, elapsed)
        peaks.append(matmul_peak_gflops(matmul_size))
    return seconds, peaks


def run_train_benchmark(config: TrainBenchmarkConfig) -> dict:
    """Runs the training-throughput benchmark.

    Args:
        config: the settings (`quick_config()` for a smoke run).

    Returns:
        A JSON-able dict: `config`, `matmul_peak_gflops` (the best of the peaks measured
        between rounds, the `matmul_peaks_gflops`), `model`, `data`, `runs` (per
        configuration name, e.g. `"ours/bucketed/jit"`: `tokens_per_second`, `mfu`,
        `warmup_s`, ...) and `ratios` (ours over the peer, on identical batches and end to
        end, per XLA mode).

    Example:

    >>> result = run_train_benchmark(quick_config())
    >>> print(format_table(result))
    """
    if not config.jit_modes:
        raise ValueError("jit_modes must hold True, False or both; got none")
    if config.rounds < 1:
        raise ValueError(f"rounds must be >= 1; got rounds={config.rounds}")
    keras.utils.set_random_seed(config.seed)
    data = prepare_batches(config)
    dims = model_dims(config, config.vocabulary_size)
    sequence_length = max(config.max_length, data.peer_length)
    specs = run_specs(config.jit_modes)
    raw = {"bucketed": data.ours, "fixed": data.peer}
    tensors = {batching: _to_tensors(items) for batching, items in raw.items()}
    with warnings.catch_warnings():
        # keras-hub's layers take the Keras masks as arguments; Keras warns that they end.
        warnings.filterwarnings("ignore", message=".*does not support masking.*")
        models = {
            (kind, jit): build_model(kind, config, config.vocabulary_size, sequence_length, jit)
            for jit in config.jit_modes
            for kind in ("ours", "peer")
        }
        warmup = {}
        for spec in specs:
            logger.info("warming up %s", spec.name)
            warmup[spec.name] = warm_up(models[spec.model, spec.jit], tensors[spec.batching])
        seconds, peaks = time_rounds(specs, models, tensors, config.rounds, config.matmul_size)
    peak = max(peaks)
    runs = {
        spec.name: run_result(
            spec,
            batch_statistics(raw[spec.batching], dims),
            seconds[spec.name],
            warmup[spec.name],
            peak,
        )
        for spec in specs
    }
    return {
        "config": dataclasses.asdict(config),
        "matmul_peak_gflops": peak,
        "matmul_peaks_gflops": peaks,
        "model": dataclasses.asdict(dims),
        "data": {
            "pairs_read": data.pairs_read,
            "pairs_timed": data.pairs_timed,
            "peer_length": data.peer_length,
            "our_batches": len(data.ours),
            "peer_batches": len(data.peer),
        },
        "runs": runs,
        "ratios": compare(runs, config.jit_modes),
    }


def format_table(result: dict) -> str:
    """The result as a readable table (throughputs, MFU, warm-up, ratios)."""
    data, model = result["data"], result["model"]
    lines = [
        f"Multi30k train: {data['pairs_timed']} pairs timed ({data['pairs_read']} read); "
        f"ours: {data['our_batches']} bucketed batches; peer: {data['peer_batches']} batches "
        f"of {result['config']['peer_batch_size']} x {data['peer_length']}",
        f"model: {model['num_encoder_layers']}+{model['num_decoder_layers']} layers, "
        f"d_model {model['d_model']}, d_ff {model['intermediate_dim']}, "
        f"vocab {model['vocabulary_size']}; tf.matmul fp32 peak "
        f"{result['matmul_peak_gflops']:.1f} GFLOP/s",
        "",
        f"{'configuration':<22} {'tgt tok/s':>10} {'MFU':>6} {'pad':>5} {'steps':>5} "
        f"{'shapes':>6} {'best s':>7} {'median s':>8} {'warmup s':>8}",
    ]
    for run in result["runs"].values():
        lines.append(
            f"{run['name']:<22} {run['tokens_per_second']:>10.1f} {run['mfu']:>6.1%} "
            f"{run['padding_fraction']:>5.0%} {run['steps']:>5d} {len(run['shapes']):>6d} "
            f"{run['best_s']:>7.2f} {run['median_s']:>8.2f} {run['warmup_s']:>8.1f}"
        )
    lines += ["", "ours / peer (target tokens per second):"]
    for ratio in result["ratios"]:
        mode = "jit" if ratio["jit"] else "no-jit"
        verdict = "met" if ratio["met"] else "NOT met"
        lines.append(
            f"  {ratio['comparison']:<18} {mode:<7} {ratio['ours_tokens_per_second']:>8.1f} / "
            f"{ratio['peer_tokens_per_second']:>8.1f} = {ratio['ratio']:.2f}x "
            f"(target {ratio['target']:.1f}x: {verdict})"
        )
    return "\n".join(lines)
