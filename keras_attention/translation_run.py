"""One training run of a translator, end to end: corpus, tokenizer, batches, `model.fit`, files,
then the SavedModel export checked by reloading it and scoring the test split.

`tools/train.py` is the command-line face of `train_translator` and `export_and_evaluate`.
"""

import dataclasses
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import keras

from keras_attention.atomic_files import atomic_path, write_json_atomically
from keras_attention.checkpoint_selection import (
    Selection,
    candidate_checkpoints,
    epoch_checkpoints,
    select_weights,
)
from keras_attention.cluster import barrier, is_chief
from keras_attention.data.datasets import load_corpus
from keras_attention.data.pipeline import encode_pairs, make_batches
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.distribute import get_strategy
from keras_attention.evaluation import score, translate_all
from keras_attention.export import Translator, export_translator, load_exported
from keras_attention.learning_curve import plot_learning_curve
from keras_attention.models import Transformer
from keras_attention.run_files import load_run_model
from keras_attention.training.callbacks import training_callbacks
from keras_attention.training.recipe import compile_with_paper_recipe
from keras_attention.training.resume import fit_resumable
from keras_attention.validation_bleu import ValidationBleu

logger = logging.getLogger(__name__)

MIXED_PRECISION_POLICIES = (None, "mixed_float16", "mixed_bfloat16")
# Settings that suit each corpus, used for every `TrainConfig` field left at `None`. The
# generated corpus's reach >= 95% held-out token accuracy in about 5 minutes on 2 CPU cores
# (measured: 98% after 5 epochs of 37-52 s); Multi30k's follow the paper and fairseq's
# transformer_tiny recipe for it.
DATASET_DEFAULTS = {
    "generated": dict(
        vocabulary_size=400,
        epochs=5,
        max_tokens=2048,
        warmup_steps=400,
        learning_rate_scale=1.0,
        validation_bleu_every=1,
        validation_bleu_sentences=300,
        average=[3],
        beam_size=4,
        alpha=0.6,
        model_overrides={"num_encoder_layers": 3, "num_decoder_layers": 3, "dropout": 0.1},
    ),
    "multi30k": dict(
        vocabulary_size=4000,
        epochs=41,
        max_tokens=4096,
        warmup_steps=2000,
        learning_rate_scale=2.5,
        validation_bleu_every=2,
        validation_bleu_sentences=500,
        average=[10],
        beam_size=5,
        alpha=1.0,
        # Pre-LN: post-LN stalls at this peak learning rate (4.9e-3); see README.
        model_overrides={"norm_first": True},
    ),
}


@dataclasses.dataclass
class TrainConfig:
    """Everything a training run needs; saved as `config.json` in the output folder.

    Attributes:
        output_dir: the run's folder (config, tokenizer, backups, checkpoints, logs, model).
        dataset: `"generated"` or `"multi30k"`.
        data_dir: folder of the Multi30k files (downloaded when `None`).
        train_pairs: use only the first `train_pairs` training pairs (`None`: all).
        preset: model size (`"tiny"`, `"small"`, `"base"`, `"big"`).
        model_overrides: constructor arguments that replace the preset's (merged over the
            dataset's).
        vocabulary_size: SentencePiece vocabulary size.
        epochs: passes over the training split.
        max_tokens: padded tokens per batch.
        max_length: longest sequence kept, in subword tokens (longer pairs are dropped).
        warmup_steps: warm-up of the paper's schedule.
        learning_rate_scale: multiplier of the paper's schedule.
        label_smoothing: the paper's `epsilon_ls`.
        devices: devices for `MirroredStrategy` (`None`: every GPU, or the default device).
        jit_compile: compile the train step with XLA; `None` turns it on when a GPU is
            visible. On CPU it is off: with batches of thousands of tokens the matmuls
            dominate and XLA measured no faster here, while it compiles each batch shape for
            15-30 s (see `tools/benchmark.py train`).
        mixed_precision: `None`, `"mixed_float16"` or `"mixed_bfloat16"`.
        seed: seed of the corpus, the shuffling and the initial weights.
        connect_timeout: seconds the workers of a multi-worker `TF_CONFIG` cluster wait for
            each other to join before failing.
        validation_bleu_every: translate the validation split every this many epochs (and
            after the last) with greedy search, logging `val_bleu`/`val_chrf` and keeping the
            best weights (`ValidationBleu`); 0 turns it off.
        validation_bleu_sentences: translate a fixed, seeded subset of this many validation
            sentences (`None`: all).
        average: the K of the end-of-run candidates "average of the last K checkpoints" and
            "average of the K best"; `[]`: no averaging.
        beam_size: beam width of the final search (candidate choice, test scores, export).
        alpha: its length-penalty exponent.
        backup_every_steps: also back the run up every this many steps (`None`: at epoch
            ends only), so that a run killed mid-epoch loses at most that many steps.

    The fields that default to `None` take the dataset's value from `DATASET_DEFAULTS`
    (`resolved()`).
    """

    output_dir: str = "runs/translator"
    dataset: str = "generated"
    data_dir: str | None = None
    train_pairs: int | None = None
    preset: str = "tiny"
    model_overrides: dict | None = None
    vocabulary_size: int | None = None
    epochs: int | None = None
    max_tokens: int | None = None
    max_length: int = 64
    warmup_steps: int | None = None
    learning_rate_scale: float | None = None
    label_smoothing: float = 0.1
    devices: list[str] | None = None
    jit_compile: bool | None = None
    mixed_precision: str | None = None
    seed: int = 0
    connect_timeout: float = 300.0
    validation_bleu_every: int | None = None
    validation_bleu_sentences: int | None = None
    average: list[int] | None = None
    beam_size: int | None = None
    alpha: float | None = None
    backup_every_steps: int | None = None

    def resolved(self) -> "TrainConfig":
        """A copy with every `None` field that has a dataset default filled in."""
        if self.dataset not in DATASET_DEFAULTS:
            raise ValueError(
                f"dataset must be one of {sorted(DATASET_DEFAULTS)}; got dataset={self.dataset!r}"
            )
        defaults = DATASET_DEFAULTS[self.dataset]
        filled = {name: value for name, value in defaults.items() if getattr(self, name) is None}
        # Model overrides merge: the user's win over the dataset's.
        filled["model_overrides"] = {**defaults["model_overrides"], **(self.model_overrides or {})}
        return dataclasses.replace(self, **filled)

    def validate(self) -> None:
        """Raises `ValueError` naming the first bad field."""
        if self.mixed_precision not in MIXED_PRECISION_POLICIES:
            raise ValueError(
                f"mixed_precision must be one of {MIXED_PRECISION_POLICIES}; "
                f"got mixed_precision={self.mixed_precision!r}"
            )
        optional = ("train_pairs", "validation_bleu_sentences", "backup_every_steps")
        for name in ("epochs", "max_tokens", "max_length", "warmup_steps", "beam_size", *optional):
            value = getattr(self, name)
            if name in optional and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
        every = self.validation_bleu_every
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ValueError(
                "validation_bleu_every must be an integer >= 0; got "
                f"validation_bleu_every={every!r}"
            )
        if not isinstance(self.average, list) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 2 for k in self.average
        ):
            raise ValueError(
                f"average must be a list of integers >= 2; got average={self.average!r}"
            )


@dataclasses.dataclass
class TrainResult:
    """What a run produced.

    Attributes:
        model: the trained model.
        tokenizer: its tokenizer.
        history: per-epoch metrics of this process's `fit` (resumed epochs only).
        test_metrics: loss, masked token accuracy and perplexity on the test split.
        model_path: the final `.keras` file.
        config: the settings used (dataset defaults filled in).
        output_dir: the folder this process wrote: `config.output_dir`, except on the
            non-chief workers of a cluster, which write to a temporary folder that
            `cleanup()` removes.
        is_chief: whether this process is the one that writes `config.output_dir`.
        selection: which weights the run kept, chosen on the validation split.
    """

    model: Transformer
    tokenizer: SubwordTokenizer
    history: dict
    test_metrics: dict
    model_path: Path
    config: TrainConfig
    output_dir: Path
    is_chief: bool = True
    selection: Selection | None = None

    def cleanup(self) -> None:
        """Removes a non-chief worker's temporary folder; nothing on the chief."""
        if not self.is_chief:
            shutil.rmtree(self.output_dir, ignore_errors=True)


def _resolve_jit(jit_compile: bool | None) -> bool:
    if jit_compile is not None:
        return jit_compile
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("GPU"))


def _tokenizer_for(
    output_dir: Path, sources: list[str], targets: list[str], size: int, strategy
) -> SubwordTokenizer:
    """The run's tokenizer: the saved one when resuming, else a new one learned and saved by
    the chief, which the other workers then read."""
    path = output_dir / "tokenizer.model"
    if is_chief(strategy) and not path.exists():
        SubwordTokenizer.train(sources + targets, size).save(path)
    barrier(strategy)
    return SubwordTokenizer.load(path)


def train_translator(config: TrainConfig) -> TrainResult:
    """Trains a translator with the paper's recipe and writes everything to `output_dir`.

    Killed and started again with the same `output_dir`, the run resumes from the last
    backup: the last epoch end, or with `backup_every_steps` the last step backed up
    (`fit_resumable`).

    With a multi-worker `TF_CONFIG`, run it on every worker with the same config (call it
    before TensorFlow runs any op): `output_dir` must be on storage that every worker sees;
    the chief writes it, the other workers read the tokenizer and the backup from it and
    write their own files to a temporary folder (`TrainResult.cleanup()` removes it).

    Args:
        config: the run's settings.

    Returns:
        A `TrainResult`.
    """
    config = config.resolved()
    config.validate()
    # First, because a multi-worker strategy must exist before TensorFlow runs any op.
    strategy = get_strategy(config.devices, config.connect_timeout)
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    chief = is_chief(strategy)
    write_dir = output_dir if chief else Path(tempfile.mkdtemp(prefix="keras-attention-worker-"))
    try:
        return _train(config, strategy, output_dir, write_dir, chief)
    except BaseException:
        if not chief:
            shutil.rmtree(write_dir, ignore_errors=True)
        raise


def _train(
    config: TrainConfig, strategy, output_dir: Path, write_dir: Path, chief: bool
) -> TrainResult:
    write_json_atomically(write_dir / "config.json", dataclasses.asdict(config))
    keras.utils.set_random_seed(config.seed)

    corpus = load_corpus(config.dataset, config.data_dir, seed=config.seed)
    if config.train_pairs is not None:
        sources, targets = corpus["train"]
        corpus["train"] = (sources[: config.train_pairs], targets[: config.train_pairs])
    tokenizer = _tokenizer_for(output_dir, *corpus["train"], config.vocabulary_size, strategy)
    replicas = strategy.num_replicas_in_sync

    def batches(split: str, shuffle: bool):
        encoded = encode_pairs(tokenizer, *corpus[split], max_length=config.max_length)
        logger.info("%s: %d pairs kept of %d", split, encoded.num_pairs, encoded.num_read)
        return make_batches(
            encoded,
            max_tokens=config.max_tokens,
            max_length=config.max_length,
            batch_multiple=replicas,
            shuffle=shuffle,
            seed=config.seed,
        )

    train_data, val_data, test_data = (
        batches("train", True),
        batches("val", False),
        batches("test", False),
    )
    previous_policy = keras.config.dtype_policy()
    if config.mixed_precision:
        keras.config.set_dtype_policy(config.mixed_precision)
    try:
        with strategy.scope():
            model = Transformer.from_preset(
                config.preset, vocabulary_size=tokenizer.vocabulary_size, **config.model_overrides
            )
            model.build()
            compile_with_paper_recipe(
                model,
                warmup_steps=config.warmup_steps,
                label_smoothing=config.label_smoothing,
                learning_rate_scale=config.learning_rate_scale,
                jit_compile=_resolve_jit(config.jit_compile),
            )
        callbacks = training_callbacks(
            write_dir,
            output_dir / "backup",
            is_chief=chief,
            backup_every_steps=config.backup_every_steps,
        )
        validation_bleu = _validation_bleu(config, tokenizer, corpus["val"], write_dir)
        if validation_bleu is not None:
            # After the backup, before the checkpoint and the logs (which record its scores).
            callbacks.insert(1, validation_bleu)
        history = fit_resumable(
            model,
            train_data,
            epochs=config.epochs,
            callbacks=callbacks,
            validation_data=val_data,
            verbose=2,
        )
        selection = _select(config, model, tokenizer, corpus["val"], write_dir, validation_bleu)
        test_metrics = model.evaluate(test_data, return_dict=True, verbose=0)
    finally:
        keras.config.set_dtype_policy(previous_policy)
    model_path = write_dir / "model.keras"
    with atomic_path(model_path) as tmp:
        model.save(tmp)
    write_json_atomically(write_dir / "test_metrics.json", test_metrics)
    if (write_dir / "training_log.csv").is_file():
        plot_learning_curve(write_dir / "training_log.csv", write_dir / "learning_curve.png")
    return TrainResult(
        model,
        tokenizer,
        history.history,
        test_metrics,
        model_path,
        config,
        write_dir,
        chief,
        selection,
    )


def _validation_bleu(
    config: TrainConfig, tokenizer: SubwordTokenizer, val: tuple, write_dir: Path
) -> ValidationBleu | None:
    """The run's `ValidationBleu` callback (`None` when `validation_bleu_every` is 0)."""
    if not config.validation_bleu_every:
        return None
    return ValidationBleu(
        tokenizer,
        *val,
        every_epochs=config.validation_bleu_every,
        beam_size=1,
        max_sentences=config.validation_bleu_sentences,
        seed=config.seed,
        best_path=write_dir / "checkpoints" / "best.weights.h5",
        state_path=write_dir / "validation_bleu.json",
        max_source_length=config.max_length,
    )


def _select(
    config: TrainConfig,
    model: Transformer,
    tokenizer: SubwordTokenizer,
    val: tuple,
    write_dir: Path,
    validation_bleu: ValidationBleu | None,
) -> Selection:
    """Chooses the run's final weights on the whole validation split (`select_weights`) and
    records the choice in `bleu.json`; the model is left holding them."""
    started = time.monotonic()
    epoch_bleu = {}
    if validation_bleu is not None:
        epoch_bleu = {int(e): s["bleu"] for e, s in validation_bleu.state["scores"].items()}
    candidates = candidate_checkpoints(
        epoch_checkpoints(write_dir / "checkpoints"), epoch_bleu, config.average
    )
    selection = select_weights(
        model,
        tokenizer,
        candidates,
        *val,
        beam_size=config.beam_size,
        alpha=config.alpha,
        max_source_length=config.max_length,
    )
    logger.info("final weights: %s (validation %s)", selection.name, selection.validation)
    record = {
        "model": selection.name,
        "checkpoints": selection.checkpoints,
        "validation": selection.validation,
        "beam_size": config.beam_size,
        "alpha": config.alpha,
        "selection_seconds": time.monotonic() - started,
    }
    if validation_bleu is not None:
        record["training_seconds"] = validation_bleu.state["elapsed_s"]
    write_json_atomically(write_dir / "bleu.json", record)
    return selection


def load_run(
    output_dir: str | os.PathLike,
    model_file: str | None = "model.keras",
    checkpoint: str | None = None,
):
    """The model and tokenizer of a run folder written by `train_translator`.

    Delegates to `keras_attention.run_files.load_run_model`.

    Args:
        output_dir: the run's folder.
        model_file: the model's file in `output_dir`; ignored when `checkpoint` is given.
            `None`: `model.keras` if the run has finished, else its last epoch checkpoint.
        checkpoint: an epoch checkpoint to load into the model rebuilt from `config.json`:
            `"last"`, `"best"`, a file name in `output_dir/checkpoints/` or a path.

    Returns:
        `(model, tokenizer)`.

    Raises:
        FileNotFoundError: naming the missing file.
        ValueError: naming a corrupt file or a checkpoint of another architecture.
    """
    if checkpoint is not None:
        model_file = None
    return load_run_model(output_dir, model_file, checkpoint)


@dataclasses.dataclass
class ServingCheck:
    """What `export_and_evaluate` found.

    Attributes:
        export_path: the SavedModel version folder.
        examples: `(source, translation)` pairs translated by the reloaded SavedModel.
        scores: sacreBLEU of the reloaded SavedModel on the test split.
    """

    export_path: Path
    examples: list
    scores: object


def export_and_evaluate(
    result: TrainResult,
    beam_size: int | None = None,
    alpha: float | None = None,
    num_examples: int = 5,
) -> ServingCheck:
    """Exports the trained translator, reloads the SavedModel as TF Serving would, translates
    a few test sentences with it and scores the whole test split with sacreBLEU.

    The export goes to `output_dir/export/<next version>/`. The test scores join the
    validation scores and the choice of weights in `output_dir/bleu.json`
    (`result.output_dir`: a temporary folder on non-chief workers).

    Args:
        result: the trained run.
        beam_size: beam width of the export (default: the run's `beam_size`).
        alpha: its length-penalty exponent (default: the run's `alpha`).
        num_examples: test sentences returned with their translations.
    """
    config = result.config
    beam_size = config.beam_size if beam_size is None else beam_size
    alpha = config.alpha if alpha is None else alpha
    output_dir = result.output_dir
    started = time.monotonic()
    translator = Translator(
        result.model, result.tokenizer, beam_size, alpha, max_source_length=config.max_length
    )
    export_path = export_translator(translator, output_dir / "export")
    serve = load_exported(export_path)
    sources, references = load_corpus(config.dataset, config.data_dir, seed=config.seed)["test"]
    hypotheses, _ = translate_all(serve, sources)
    scores = score(hypotheses, references)
    bleu_path = output_dir / "bleu.json"
    record = json.loads(bleu_path.read_text()) if bleu_path.is_file() else {}
    record.update(
        {
            "exported": str(export_path),
            "test": scores.as_dict(),
            "signatures": scores.signatures,
            "beam_size": beam_size,
            "alpha": alpha,
            "export_and_test_seconds": time.monotonic() - started,
        }
    )
    write_json_atomically(bleu_path, record)
    examples = list(zip(sources[:num_examples], hypotheses[:num_examples], strict=True))
    return ServingCheck(export_path, examples, scores)
