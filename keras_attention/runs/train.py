"""Training a prepared run with `model.fit` (resumable), then choosing its final weights on the
validation split (`train_translator`); loading a run folder (`load_run`).
"""

import dataclasses
import logging
import os
import shutil
import sys
import time
from pathlib import Path

import keras

from keras_attention.core.atomic_files import (
    atomic_path,
    write_bytes_atomically,
    write_json_atomically,
)
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.distribute.strategy_fixes import enable_strategy_fixes
from keras_attention.evaluation import moses_language
from keras_attention.models import Transformer
from keras_attention.models.dtype_copy import copy_with_dtype
from keras_attention.models.run_folder import MODEL_FILE
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.cpu_features import BFLOAT16_FLAGS, cpu_has_bfloat16
from keras_attention.runs.files import (
    load_model_file,
    load_run_model,
    read_selection_record,
    read_test_metrics,
)
from keras_attention.runs.fine_tune import ADAPTER_FILE, LoraCheckpoints, lora_checkpoint_name
from keras_attention.runs.learning_curve import plot_learning_curve
from keras_attention.runs.prepare import PreparedRun, prepare_run
from keras_attention.runs.report_lines import final_weights_line
from keras_attention.runs.selection import (
    Selection,
    candidate_checkpoints,
    epoch_checkpoints,
    select_weights,
)
from keras_attention.runs.validation_bleu import ValidationBleu
from keras_attention.training.callbacks import repair_run_files, training_callbacks
from keras_attention.training.early_stopping import ValidationPatience, losses_in_log
from keras_attention.training.recipe import compile_with_paper_recipe
from keras_attention.training.resume import fit_resumable

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


def _gpu_visible() -> bool:
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("GPU"))


def _resolve_jit(jit_compile: bool | None) -> bool:
    return _gpu_visible() if jit_compile is None else jit_compile


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
    model = load_model_file(model_path)  # the files checked by `prepare_run`, read here
    test_metrics = read_test_metrics(run.output_dir)
    record = read_selection_record(run.output_dir)
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


def _warn_of_slow_bfloat16(policy: str) -> None:
    if "bfloat16" not in policy or _gpu_visible():
        return
    if cpu_has_bfloat16() is False:
        logger.warning(
            "this CPU has no bfloat16 instructions (%s): mixed_bfloat16 may train slower "
            "than float32 here; --mixed-precision float32 turns it off",
            ", ".join(BFLOAT16_FLAGS),
        )


def _train(run: PreparedRun) -> TrainResult:
    config, strategy, data = run.config, run.strategy, run.data
    output_dir, write_dir, chief = run.output_dir, run.write_dir, run.is_chief
    tokenizer = data.tokenizer
    previous_policy = keras.config.dtype_policy()
    _warn_of_slow_bfloat16(config.mixed_precision)
    keras.config.set_dtype_policy(config.mixed_precision)
    steps_per_epoch = data.batches_per_epoch * data.steps_per_batch
    updates_per_epoch = steps_per_epoch // config.accumulate_steps
    try:
        with strategy.scope():
            model = Transformer.from_preset(
                config.preset, vocabulary_size=tokenizer.vocabulary_size, **config.model_overrides
            )
            model.build()
            if config.init_from is not None:
                # The parent's weights; a resumed run's backup replaces them as it restores.
                model.load_weights(Path(config.init_from) / MODEL_FILE)
                if config.lora_rank is not None:
                    model.enable_lora(config.lora_rank)
            # Per-replica dropout masks on several replicas, the fit fix on several workers.
            enable_strategy_fixes(model, strategy)
            compile_with_paper_recipe(
                model,
                warmup_steps=config.warmup_steps,
                label_smoothing=config.label_smoothing,
                learning_rate_scale=config.learning_rate_scale,
                total_steps=config.epochs * updates_per_epoch,
                cooldown_steps=config.cooldown_epochs * updates_per_epoch,
                accumulate_steps=config.accumulate_steps,
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
            keep_checkpoints=config.keep_checkpoints,
        )
        patience = None
        if config.patience is not None:
            patience = ValidationPatience(config.patience)
            callbacks.append(patience)
        if config.lora_rank is not None and chief:
            callbacks.append(LoraCheckpoints(write_dir / "checkpoints"))

        def after_restore(epoch: int, batch: int) -> None:
            logger.info("training starts at epoch %d, batch %d", epoch + 1, batch)
            repair_run_files(write_dir, epoch)
            if validation_bleu is not None:
                validation_bleu.resume_from(
                    epoch,
                    lambda number: write_dir / "checkpoints" / f"epoch_{number:03d}.weights.h5",
                )
            if patience is not None:
                patience.resume_from(losses_in_log(write_dir / "training_log.csv")[:epoch])

        history = fit_resumable(
            model,
            data.train_batches,
            epochs=config.epochs,
            callbacks=callbacks,
            after_restore=after_restore,
            steps_per_batch=data.steps_per_batch,
            validation_data=data.val_batches,
            shuffle=False,  # each epoch's batches are already shuffled, with a seed
            # A progress bar at a terminal; one line per epoch in a log file.
            verbose=1 if sys.stdout.isatty() else 2,
        )
        selection = _select(
            config, model, tokenizer, data.corpus["val"], write_dir, validation_bleu
        )
        test_metrics = model.evaluate(data.test_batches, return_dict=True, verbose=0)
        if config.lora_rank is not None and chief:
            _keep_adapter(write_dir, selection)
    finally:
        keras.config.set_dtype_policy(previous_policy)
    write_json_atomically(write_dir / "test_metrics.json", test_metrics)
    if (write_dir / "training_log.csv").is_file():
        _plot(write_dir)
    # Last: `model.keras` says that the run is finished (`train_prepared`).
    model_path = write_dir / "model.keras"
    with atomic_path(model_path) as tmp:
        # A LoRA run's model is saved as its plain copy: the merged kernels, and no
        # optimizer of LoRA kernels that the loaded model would not have.
        (copy_with_dtype(model, model.dtype_policy.name) if config.lora_rank else model).save(tmp)
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


def _keep_adapter(write_dir: Path, selection: Selection) -> None:
    """A LoRA run's adapter: the LoRA kernels of the epoch its choice of weights kept
    (`adapter.lora.h5`, beside `model.keras`, which holds them merged); none for an average
    of several epochs, whose merged weights no one low-rank update gives."""
    epochs = epoch_checkpoints(write_dir / "checkpoints")
    if selection.checkpoints:
        if len(selection.checkpoints) > 1:
            logger.warning(
                "%s averages %d checkpoints: no adapter.lora.h5 (model.keras holds the "
                "average, merged)",
                selection.name,
                len(selection.checkpoints),
            )
            return
        chosen = Path(selection.checkpoints[0]).name
        epoch = next(number for number, path in epochs.items() if path.name == chosen)
    else:
        epoch = max(epochs)  # "last"
    source = write_dir / "checkpoints" / lora_checkpoint_name(epoch)
    write_bytes_atomically(write_dir / ADAPTER_FILE, source.read_bytes())


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
        language=moses_language(config.target_lang),
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
        language=moses_language(config.target_lang),
        translator=_greedy_translator(config, validation_bleu),
    )
    # DEBUG: the tool's summary names the weights chosen, with their scores, once.
    logger.debug("%s", final_weights_line(selection.name, selection.validation))
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


def _greedy_translator(config: TrainConfig, validation_bleu: ValidationBleu | None):
    """The validation callback's greedy translator, for a final search that is greedy too
    (its search is not traced twice); `None` otherwise."""
    if config.beam_size != 1 or validation_bleu is None:
        return None
    translator = validation_bleu.translator
    if translator is None or translator.max_source_length != config.max_length:
        return None
    return translator


def load_run(
    output_dir: str | os.PathLike,
    model_file: str | None = "model.keras",
    checkpoint: str | None = None,
):
    """The model and tokenizer of a run folder written by `train_translator`.

    Delegates to `keras_attention.runs.files.load_run_model`.

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
