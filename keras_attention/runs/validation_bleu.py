"""Validation BLEU while training: a Keras callback that translates a validation set with the
cached search, logs sacreBLEU and chrF, and keeps the best weights."""

import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np

from keras_attention.core.atomic_files import atomic_path, temporary_files, write_json_atomically
from keras_attention.core.weights_file import save_weights_atomically
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.evaluation import score, translate_all
from keras_attention.runs.files import read_validation_state
from keras_attention.serving.translator import Translator

# Keys added to the epoch logs (so to `training_log.csv` and TensorBoard) every epoch; NaN on
# epochs without a translation, so that every CSV row has the same columns.
LOG_KEYS = ("val_bleu", "val_chrf", "val_bleu_tokenized", "elapsed_s")


def seeded_subset(count: int, size: int | None, seed: int) -> np.ndarray:
    """Sorted indices of a fixed random subset of `size` of `count` items (all when `None`)."""
    if size is None or size >= count:
        return np.arange(count)
    if size < 1:
        raise ValueError(f"size must be >= 1 or None; got size={size}")
    return np.sort(np.random.default_rng(seed).choice(count, size, replace=False))


class ValidationBleu(keras.callbacks.Callback):
    """Translates validation sentences every `every_epochs` epochs and scores them.

    Adds `val_bleu` (sacreBLEU, cased, 13a), `val_chrf`, `val_bleu_tokenized` (lowercased,
    Moses-tokenized) and `elapsed_s` (wall-clock seconds since the run began, resumes
    included) to the epoch logs, so that `CSVLogger` and `TensorBoard` placed after it in the
    callback list record them; on epochs without a translation the scores are NaN. When
    `val_bleu` improves, the weights are written (atomically) to `best_path`.

    The state (best score, scores of every evaluated epoch, elapsed time) is kept in
    `state_path`, so a resumed run goes on where it stopped; `resume_from` first forgets
    the epochs that the run's backup does not cover (a killed run trains them again).

    Args:
        tokenizer: the model's tokenizer.
        sources: validation source sentences.
        references: their reference translations.
        every_epochs: translate after every `every_epochs`-th epoch (and after the last).
        beam_size: 1 (greedy, the cheapest) or a beam width.
        alpha: length-penalty exponent of beam search.
        max_sentences: translate a fixed subset of this many sentences (`None`: all).
        seed: seed of the subset.
        best_path: where to keep the best weights (`.weights.h5`); `None`: not kept.
        state_path: the callback's JSON state; `None`: not kept.
        max_source_length: the longest source kept, in tokens.
        batch_size: sentences per translation call.
        language: the target language (for the Moses-tokenized BLEU).

    Example:

    >>> from keras_attention.runs.train import load_run
    >>> model, tokenizer = load_run("runs/translator")
    >>> sources = ["A dog runs.", "Two men eat."]
    >>> references = ["Ein Hund rennt.", "Zwei Männer essen."]
    >>> callback = ValidationBleu(tokenizer, sources, references, every_epochs=2)
    >>> log = keras.callbacks.CSVLogger("log.csv")
    >>> history = model.fit(train_data, epochs=2, callbacks=[callback, log], verbose=0)
    >>> np.isnan(history.history["val_bleu"])  # translated after the second epoch only
    array([ True, False])
    """

    def __init__(
        self,
        tokenizer: SubwordTokenizer,
        sources: Sequence[str],
        references: Sequence[str],
        every_epochs: int = 1,
        beam_size: int = 1,
        alpha: float = 0.6,
        max_sentences: int | None = None,
        seed: int = 0,
        best_path: str | os.PathLike | None = None,
        state_path: str | os.PathLike | None = None,
        max_source_length: int = 128,
        batch_size: int = 128,
        language: str = "de",
    ):
        super().__init__()
        if len(sources) != len(references) or not sources:
            raise ValueError(
                "sources and references must be non-empty and of equal length; got "
                f"{len(sources)} and {len(references)}"
            )
        if not isinstance(every_epochs, int) or every_epochs < 1:
            raise ValueError(f"every_epochs must be an integer >= 1; got {every_epochs!r}")
        keep = seeded_subset(len(sources), max_sentences, seed)
        self.sources = [sources[i] for i in keep]
        self.references = [references[i] for i in keep]
        self.tokenizer = tokenizer
        self.every_epochs = every_epochs
        self.beam_size = beam_size
        self.alpha = alpha
        self.best_path = Path(best_path) if best_path is not None else None
        self.state_path = Path(state_path) if state_path is not None else None
        self.max_source_length = max_source_length
        self.batch_size = batch_size
        self.language = language
        self.state = {"best_epoch": None, "best_bleu": None, "scores": {}, "elapsed_s": 0.0}
        self._translator = None
        self._started = None
        self._elapsed_before = 0.0

    @property
    def translator(self) -> Translator | None:
        """The callback's `Translator` of the model (from the start of training; `None`
        before): its search is traced at the first validation, and can be reused."""
        return self._translator

    def _read_state(self) -> None:
        if self.state_path is not None and self.state_path.is_file():
            self.state = read_validation_state(self.state_path)  # names a corrupt file

    def resume_from(
        self, finished_epochs: int, checkpoint: Callable[[int], os.PathLike] | None = None
    ) -> None:
        """Forgets the scores of the epochs after `finished_epochs` (those a killed run
        scored after its last backup, which training does again), and makes `best_path`
        hold the weights of the best epoch left.

        A kill can come between the writes of `best_path` and of the state: the best
        weights are copied again from that epoch's checkpoint, which holds the same weights.

        Args:
            finished_epochs: how many epochs the restored backup has finished.
            checkpoint: the checkpoint file of an epoch (1-based), e.g.
                `lambda epoch: f"checkpoints/epoch_{epoch:03d}.weights.h5"`.
        """
        self._read_state()
        scores = {
            number: values
            for number, values in self.state.get("scores", {}).items()
            if int(number) <= finished_epochs
        }
        scored = [n for n in scores if scores[n]["bleu"] is not None]  # null: not a number
        best = max(scored, key=lambda n: (scores[n]["bleu"], -int(n)), default=None)
        self.state.update(
            scores=scores,
            best_epoch=None if best is None else int(best),
            best_bleu=None if best is None else scores[best]["bleu"],
        )
        if self.state_path is not None:
            for path in temporary_files(self.state_path.parent, [self.state_path.name]):
                path.unlink()
            write_json_atomically(self.state_path, self.state)
        if self.best_path is None:
            return
        for path in temporary_files(self.best_path.parent, [self.best_path.name]):
            path.unlink()
        source = None if best is None or checkpoint is None else Path(checkpoint(int(best)))
        if best is None:
            self.best_path.unlink(missing_ok=True)
        elif source is not None and source.is_file():
            with atomic_path(self.best_path) as tmp:
                shutil.copyfile(source, tmp)

    def on_train_begin(self, logs=None):
        self._read_state()
        self._elapsed_before = float(self.state.get("elapsed_s", 0.0))
        self._started = time.monotonic()
        # Translator's tf.function reads the model's variables, so it follows training.
        self._translator = Translator(
            self.model,
            self.tokenizer,
            beam_size=self.beam_size,
            alpha=self.alpha,
            max_source_length=self.max_source_length,
        )

    def evaluate(self) -> dict:
        """Translates the validation sentences with the current weights; returns the scores."""
        translator = self._translator

        def translate(sentences):
            return translator.translate(sentences)

        hypotheses, _ = translate_all(translate, self.sources, self.batch_size)
        return score(hypotheses, self.references, self.language).as_dict()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        number = epoch + 1
        last = number == self.params.get("epochs") if self.params else False
        scores = None
        if number % self.every_epochs == 0 or last:
            scores = self.evaluate()
            self.state["scores"][str(number)] = scores
            best = self.state["best_bleu"]
            if best is None or scores["bleu"] > best:
                self.state["best_bleu"] = scores["bleu"]
                self.state["best_epoch"] = number
                if self.best_path is not None:
                    self._save_best()
        for key, name in (
            ("val_bleu", "bleu"),
            ("val_chrf", "chrf"),
            ("val_bleu_tokenized", "bleu_tokenized"),
        ):
            logs[key] = scores[name] if scores else float("nan")
        elapsed = self._elapsed_before + time.monotonic() - self._started
        logs["elapsed_s"] = elapsed
        self.state["elapsed_s"] = elapsed
        if self.state_path is not None:
            write_json_atomically(self.state_path, self.state)

    def _save_best(self) -> None:
        self.best_path.parent.mkdir(parents=True, exist_ok=True)
        save_weights_atomically(self.model, self.best_path)
