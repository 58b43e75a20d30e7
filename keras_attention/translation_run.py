"""One training run of a translator, end to end: corpus, tokenizer, batches, `model.fit`, files,
then the SavedModel export checked by reloading it and scoring the test split.

`tools/train.py` is the command-line face of `train_translator` and `export_and_evaluate`.
"""

import dataclasses
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

from keras_attention.checkpoint_selection import (
    Selection,
    candidate_checkpoints,
    epoch_checkpoints,
    select_weights,
)
from keras_attention.core.atomic_files import (
    atomic_path,
    fault_point,
    write_json_atomically,
)
from keras_attention.data.datasets import load_corpus
from keras_attention.data.pipeline import encode_pairs, make_batches
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.distribute import get_strategy
from keras_attention.distribute.cluster import barrier, is_chief
from keras_attention.evaluation import Scores, score, translate_all
from keras_attention.export import Translator, export_translator, load_exported
from keras_attention.learning_curve import plot_learning_curve
from keras_attention.models import Transformer
from keras_attention.models.presets import preset_config
from keras_attention.run_config import TrainConfig
from keras_attention.run_files import load_run_model
from keras_attention.run_folder import (
    inspect_run_folder,
    remove_run_files,
    remove_temporary_files,
)
from keras_attention.training.callbacks import repair_run_files, training_callbacks
from keras_attention.training.recipe import compile_with_paper_recipe
from keras_attention.training.resume import fit_resumable
from keras_attention.validation_bleu import ValidationBleu

logger = logging.getLogger(__name__)


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


def _check_model_overrides(config: "TrainConfig") -> None:
    """Raises `ValueError` if the preset's model cannot be made with `model_overrides`
    (constructed without weights, outside any strategy, before the run's seed is set)."""
    try:
        settings = preset_config(config.preset, **config.model_overrides)
        Transformer(config.vocabulary_size, **settings, name="model_overrides_check")
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"model_overrides={json.dumps(config.model_overrides)} do not make a "
            f"{config.preset!r} Transformer: {error}"
        ) from None


def _epoch_seed(seed: int, epoch: int) -> int:
    """The shuffling seed of epoch `epoch`: a function of the run's seed and the epoch only,
    so that a resumed run trains on the batches of an uninterrupted one."""
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0] % 2**31)


@dataclasses.dataclass
class RunData:
    """A run's corpus, tokenizer and batches.

    Attributes:
        corpus: `{"train": (sources, targets), "val": ..., "test": ...}`.
        tokenizer: the run's tokenizer.
        train_batches: `epoch -> tf.data.Dataset` of that epoch's batches, shuffled with a
            seed of the run's seed and the epoch (see `fit_resumable`).
        val_batches: the validation batches.
        test_batches: the test batches.
    """

    corpus: dict
    tokenizer: SubwordTokenizer
    train_batches: object
    val_batches: object
    test_batches: object


def _run_data(
    config: "TrainConfig", corpus: dict, tokenizer: SubwordTokenizer, replicas: int
) -> RunData:
    """Encodes and batches the corpus; raises `ValueError` if no training pair fits."""
    encoded = {}
    for split, (sources, targets) in corpus.items():
        encoded[split] = encode_pairs(tokenizer, sources, targets, max_length=config.max_length)
        logger.info(
            "%s: %d pairs kept of %d", split, encoded[split].num_pairs, encoded[split].num_read
        )
    if not encoded["train"].num_pairs:
        raise ValueError(
            f"no training pair is at most max_length={config.max_length} tokens long "
            f"(of {encoded['train'].num_read})"
        )

    def batches(split: str, shuffle: bool, seed: int):
        return make_batches(
            encoded[split],
            max_tokens=config.max_tokens,
            max_length=config.max_length,
            batch_multiple=replicas,
            shuffle=shuffle,
            seed=seed,
        )

    def train_batches(epoch: int):
        return batches("train", True, _epoch_seed(config.seed, epoch))

    train_batches(0)  # checks that the settings batch the corpus, before any file is written
    return RunData(
        corpus,
        tokenizer,
        train_batches,
        batches("val", False, config.seed),
        batches("test", False, config.seed),
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
    """

    config: TrainConfig
    strategy: object
    output_dir: Path
    write_dir: Path
    is_chief: bool
    data: RunData


def prepare_run(config: TrainConfig, overwrite: bool = False) -> PreparedRun:
    """Checks everything a run needs, then writes its `config.json` and `tokenizer.model`.

    Everything that can be wrong with the settings, the corpus or the output folder is found
    before anything is written, so a start that fails leaves nothing that a later run would
    pick up: settings (`TrainConfig.validate`, the model's overrides), the folder
    (`inspect_run_folder`: another run's folder is refused unless `overwrite`), the corpus,
    the tokenizer (learned in memory, or the saved one when resuming) and the batches.

    Args:
        config: the run's settings.
        overwrite: remove the files of a run already in `config.output_dir` and start afresh.

    Returns:
        A `PreparedRun`, for `train_prepared`.

    Raises:
        ValueError: naming the setting, file or folder at fault.
        OSError: a corpus file cannot be read.
    """
    config = config.resolved()
    config.validate()
    # First, because a multi-worker strategy must exist before TensorFlow runs any op.
    strategy = get_strategy(config.devices, config.connect_timeout)
    _check_model_overrides(config)
    output_dir = Path(config.output_dir)
    chief = is_chief(strategy)
    resuming = inspect_run_folder(output_dir, config, overwrite)
    keras.utils.set_random_seed(config.seed)
    corpus = load_corpus(config.dataset, config.data_dir, seed=config.seed)
    if config.train_pairs is not None:
        sources, targets = corpus["train"]
        corpus["train"] = (sources[: config.train_pairs], targets[: config.train_pairs])
    tokenizer_path = output_dir / "tokenizer.model"
    replicas = strategy.num_replicas_in_sync
    data = None
    if chief:
        if resuming and tokenizer_path.is_file():
            try:
                tokenizer = SubwordTokenizer.load(tokenizer_path)
            except ValueError as error:
                raise ValueError(f"{tokenizer_path} is corrupt: {error}") from None
        else:
            sources, targets = corpus["train"]
            tokenizer = SubwordTokenizer.train(sources + targets, config.vocabulary_size)
        data = _run_data(config, corpus, tokenizer, replicas)
        # Everything checked: the run's folder is written from here on.
        if overwrite and output_dir.is_dir():
            remove_run_files(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        remove_temporary_files(output_dir)
        if not resuming:
            write_json_atomically(output_dir / "config.json", dataclasses.asdict(config))
        if not tokenizer_path.is_file():
            tokenizer.save(tokenizer_path)
    barrier(strategy)  # the other workers read the chief's tokenizer
    if not chief:
        data = _run_data(config, corpus, SubwordTokenizer.load(tokenizer_path), replicas)
    write_dir = output_dir
    if not chief:
        write_dir = Path(tempfile.mkdtemp(prefix="keras-attention-worker-"))
        write_json_atomically(write_dir / "config.json", dataclasses.asdict(config))
    return PreparedRun(config, strategy, output_dir, write_dir, chief, data)


def train_translator(config: TrainConfig, overwrite: bool = False) -> TrainResult:
    """Trains a translator with the paper's recipe and writes everything to `output_dir`.

    A run folder belongs to one configuration. Started again with the same settings and
    `output_dir` (after a kill, say), the run resumes: from the last backup (an epoch end,
    or with `backup_every_steps` the last step backed up; `fit_resumable`) while training,
    at the choice of weights after it, and with nothing to do once `model.keras` is written
    (that file is written last). The resumed run trains on the batches, in the order, of an
    uninterrupted one (each epoch is shuffled with its own seed). Started with other
    settings in that folder it is refused, unless `overwrite` (see `prepare_run`).

    Every file is written atomically (a temporary name, then a rename), except the CSV log
    and TensorBoard's, which are appended to: on resuming, the log rows, checkpoints and
    validation scores of epochs after the backup are dropped (they are written again) and
    the temporary files of interrupted writes removed.

    With a multi-worker `TF_CONFIG`, run it on every worker with the same config (call it
    before TensorFlow runs any op): `output_dir` must be on storage that every worker sees;
    the chief writes it, the other workers read the tokenizer and the backup from it and
    write their own files to a temporary folder (`TrainResult.cleanup()` removes it).

    Args:
        config: the run's settings.
        overwrite: remove the files of another run in `output_dir` and start afresh.

    Returns:
        A `TrainResult`.

    Raises:
        ValueError: as `prepare_run`, before anything is written.
    """
    return train_prepared(prepare_run(config, overwrite))


def train_prepared(run: PreparedRun) -> TrainResult:
    """Trains (or resumes) a run checked by `prepare_run`; returns its `TrainResult`."""
    try:
        if (run.output_dir / "model.keras").is_file():
            return _finished(run)
        return _train(run)
    except BaseException:
        if not run.is_chief:
            shutil.rmtree(run.write_dir, ignore_errors=True)
        raise


def _finished(run: PreparedRun) -> TrainResult:
    """The `TrainResult` of a run whose training and choice of weights are done."""
    logger.info("%s holds a finished run: nothing to train", run.output_dir)
    if run.is_chief:
        shutil.rmtree(run.output_dir / "backup", ignore_errors=True)
    model_path = run.output_dir / "model.keras"
    model = keras.models.load_model(model_path)
    test_metrics = json.loads((run.output_dir / "test_metrics.json").read_text())
    record = json.loads((run.output_dir / "bleu.json").read_text())
    selection = Selection(record["model"], record["checkpoints"], record["validation"])
    return TrainResult(
        model,
        run.data.tokenizer,
        {},
        test_metrics,
        model_path,
        run.config,
        run.write_dir,
        run.is_chief,
        selection,
    )


def _train(run: PreparedRun) -> TrainResult:
    config, strategy, data = run.config, run.strategy, run.data
    output_dir, write_dir, chief = run.output_dir, run.write_dir, run.is_chief
    tokenizer = data.tokenizer
    previous_policy = keras.config.dtype_policy()
    if config.mixed_precision:
        keras.config.set_dtype_policy(config.mixed_precision)
    steps_per_epoch = int(data.train_batches(0).cardinality())
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
                total_steps=config.epochs * steps_per_epoch,
                cooldown_steps=config.cooldown_epochs * steps_per_epoch,
                jit_compile=_resolve_jit(config.jit_compile),
            )
        validation_bleu = _validation_bleu(config, tokenizer, data.corpus["val"], write_dir)
        callbacks = training_callbacks(
            write_dir,
            output_dir / "backup",
            is_chief=chief,
            backup_every_steps=config.backup_every_steps,
            before_logs=[validation_bleu] if validation_bleu is not None else [],
            delete_backup=False,  # removed once model.keras is written (see below)
        )

        def after_restore(epoch: int, batch: int) -> None:
            logger.info("training starts at epoch %d, batch %d", epoch + 1, batch)
            repair_run_files(write_dir, epoch)
            if validation_bleu is not None:
                validation_bleu.resume_from(
                    epoch,
                    lambda number: write_dir / "checkpoints" / f"epoch_{number:03d}.weights.h5",
                )

        history = fit_resumable(
            model,
            data.train_batches,
            epochs=config.epochs,
            callbacks=callbacks,
            after_restore=after_restore,
            validation_data=data.val_batches,
            shuffle=False,  # each epoch's batches are already shuffled, with a seed
            # A progress bar at a terminal; one line per epoch in a log file.
            verbose=1 if sys.stdout.isatty() else 2,
        )
        selection = _select(
            config, model, tokenizer, data.corpus["val"], write_dir, validation_bleu
        )
        test_metrics = model.evaluate(data.test_batches, return_dict=True, verbose=0)
    finally:
        keras.config.set_dtype_policy(previous_policy)
    write_json_atomically(write_dir / "test_metrics.json", test_metrics)
    if (write_dir / "training_log.csv").is_file():
        _plot(write_dir)
    # Last: `model.keras` says that the run is finished (`train_prepared`).
    model_path = write_dir / "model.keras"
    with atomic_path(model_path) as tmp:
        model.save(tmp)
    if chief:
        shutil.rmtree(output_dir / "backup", ignore_errors=True)
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


def _plot(write_dir: Path) -> None:
    """Draws `learning_curve.png` (atomically: a resumed run removes what a kill leaves)."""
    plot_learning_curve(write_dir / "training_log.csv", write_dir / "learning_curve.png")


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

    The export goes to `output_dir/export/1/` (replaced when a resumed run exports again).
    The test scores join the validation scores and the choice of weights in
    `output_dir/bleu.json` (`result.output_dir`: a temporary folder on non-chief workers).
    A run that was exported and scored with the same search already (a finished run run
    again) is not exported again: its SavedModel translates the examples and the recorded
    scores are returned.

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
    bleu_path = output_dir / "bleu.json"
    record = json.loads(bleu_path.read_text()) if bleu_path.is_file() else {}
    if _already_exported(record, output_dir / "export" / "1", beam_size, alpha):
        export_path = Path(record["exported"])
        sources = load_corpus(config.dataset, config.data_dir, seed=config.seed)["test"][0]
        examples, _ = translate_all(load_exported(export_path), sources[:num_examples])
        scores = Scores(**record["test"], signatures=record["signatures"])
        return ServingCheck(export_path, list(zip(sources, examples, strict=False)), scores)
    started = time.monotonic()
    translator = Translator(
        result.model, result.tokenizer, beam_size, alpha, max_source_length=config.max_length
    )
    # Version 1, replaced by a resumed run: a run exports its translator once.
    export_path = export_translator(translator, output_dir / "export", version=1, overwrite=True)
    fault_point("export")
    serve = load_exported(export_path)
    sources, references = load_corpus(config.dataset, config.data_dir, seed=config.seed)["test"]
    hypotheses, _ = translate_all(serve, sources)
    scores = score(hypotheses, references)
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


def _already_exported(record: dict, export_path: Path, beam_size: int, alpha: float) -> bool:
    """Whether `bleu.json`'s `record` holds the test scores of the SavedModel at
    `export_path`, exported with this beam width and length penalty."""
    return (
        record.get("exported") == str(export_path)
        and (export_path / "saved_model.pb").is_file()
        and {"test", "signatures"} <= set(record)
        and record.get("beam_size") == beam_size
        and record.get("alpha") == alpha
    )
