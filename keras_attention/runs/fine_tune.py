"""Fine-tuning a finished run on new files (`tools/train.py --init-from RUN`).

The new run starts from RUN's weights (`model.keras`), keeps its tokenizer (copied byte for
byte), its model settings and its search, and trains with the fine-tuning recipe: a short
warm-up to a lower peak learning rate (`PEAK_SHARE` of RUN's peak), at most `EPOCHS` epochs,
stopping once the validation loss has not improved for `PATIENCE` epochs, the epoch with
the best validation BLEU kept (no checkpoint averaging). Every setting can still be given.

What cannot work is refused before anything is written: a vocabulary, preset, case
handling or model shape other than RUN's, a RUN that has not finished, or (unless forced) a
language pair other than RUN's. `config.json` records `init_from`, and `started_from.json`
RUN's path and the digest of the `model.keras` it started from.
"""

import hashlib
import math
import os
from pathlib import Path

import keras

from keras_attention.core.file_checks import read_json_object
from keras_attention.models.lora import LORA_SUFFIX, save_lora_weights
from keras_attention.models.run_folder import MODEL_FILE, TOKENIZER_FILES, is_run_folder

RECIPE = "fine-tune"
# The fine-tuning recipe. The peak is a share of the parent run's peak learning rate;
# the share was chosen on the adaptation experiment's in-domain validation split
# (docs/adaptation.md).
PEAK_SHARE = 0.5
WARMUP_STEPS = 100
EPOCHS = 20
PATIENCE = 3
# The model settings a fine-tuned run may change: they do not change the weights' shapes.
CHANGEABLE_OVERRIDES = ("dropout", "attention_dropout", "activation_dropout")
# The settings inherited from the parent run, unless given.
INHERITED = (
    "preset", "vocabulary_size", "lowercase", "max_length", "max_tokens", "mixed_precision",
    "beam_size", "alpha", "subword_sampling",
)  # fmt: skip
STARTED_FROM_FILE = "started_from.json"
# A LoRA run's adapter: the LoRA kernels of the epoch it kept (`model.keras` holds them merged).
ADAPTER_FILE = "adapter.lora.h5"


def parent_settings(run_dir: str | os.PathLike) -> dict:
    """The finished parent run's `config.json`, as a dict.

    Raises:
        ValueError: naming `run_dir` if it is not a run folder or has not finished
            (no `model.keras`).
    """
    path = Path(run_dir)
    if not is_run_folder(path):
        raise ValueError(f"init_from={run_dir}: not a run folder of tools/train.py")
    if not (path / MODEL_FILE).is_file():
        raise ValueError(
            f"init_from={run_dir}: the run has not finished (no {MODEL_FILE}); fine-tune a "
            "finished run"
        )
    return read_json_object(path / "config.json")


def fine_tune_settings(parent: dict) -> dict:
    """The fine-tuning recipe for a child of `parent` (its `config.json`): its inherited
    settings, and a schedule that peaks at `PEAK_SHARE` of the parent's peak after
    `WARMUP_STEPS` updates. The paper's schedule peaks at `scale / sqrt(d_model * warm-up)`,
    so the scale is `PEAK_SHARE * parent's scale * sqrt(WARMUP_STEPS / parent's warm-up)`."""
    scale = PEAK_SHARE * parent["learning_rate_scale"]
    scale *= math.sqrt(WARMUP_STEPS / parent["warmup_steps"])
    return {
        **{name: parent.get(name) for name in INHERITED if parent.get(name) is not None},
        "model_overrides": dict(parent.get("model_overrides") or {}),
        "epochs": EPOCHS,
        "warmup_steps": WARMUP_STEPS,
        "learning_rate_scale": round(scale, 6),
        "cooldown_epochs": 0,
        "validation_bleu_every": 1,
        "validation_bleu_sentences": parent.get("validation_bleu_sentences"),
        "average": [],
        "patience": PATIENCE,
    }


def check_child(given: dict, parent: dict, run_dir: str, force_languages: bool) -> None:
    """Refuses, naming the option, what a child run of `parent` cannot change.

    Args:
        given: the child's settings as given (`None` where not given).
        parent: the parent's `config.json`.
        run_dir: the parent's folder, for the messages.
        force_languages: allow another language pair.

    Raises:
        ValueError: naming the setting and both values.
    """
    for name in ("vocabulary_size", "preset", "lowercase"):
        value = given.get(name)
        if value is not None and value != parent.get(name):
            raise ValueError(
                f"{name}={value!r}: the run fine-tuned from {run_dir} keeps its "
                f"{name}={parent.get(name)!r} (its tokenizer and weights)"
            )
    for name, value in (given.get("model_overrides") or {}).items():
        inherited = (parent.get("model_overrides") or {}).get(name)
        if name not in CHANGEABLE_OVERRIDES and value != inherited:
            raise ValueError(
                f"model_overrides {name}={value!r}: fine-tuning {run_dir} keeps its model's "
                f"shape; only {', '.join(CHANGEABLE_OVERRIDES)} may change"
            )
    if force_languages:
        return
    for name in ("source_lang", "target_lang"):
        value, theirs = given.get(name), parent.get(name)
        if value is not None and theirs is not None and value != theirs:
            raise ValueError(
                f"{name}={value!r}: {run_dir} translates {parent.get('source_lang')} -> "
                f"{parent.get('target_lang')}; fine-tune it on the same pair, or set "
                "force_language_pair"
            )


def started_from(run_dir: str | os.PathLike) -> dict:
    """What `started_from.json` records: the parent's path and its model's digest."""
    model = Path(run_dir) / MODEL_FILE
    return {
        "run": str(Path(run_dir).resolve()),
        "model": MODEL_FILE,
        "sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
    }


def tokenizer_files(run_dir: str | os.PathLike) -> list[Path]:
    """The parent's tokenizer files that exist (the model, and its recaser if any)."""
    return [Path(run_dir) / name for name in TOKENIZER_FILES if (Path(run_dir) / name).is_file()]


class LoraCheckpoints(keras.callbacks.Callback):
    """Writes the LoRA kernels after every epoch, `checkpoints/epoch_NNN.lora.h5` (beside
    the epoch's merged weights), so that the epoch the run keeps has its adapter file."""

    def __init__(self, folder: str | os.PathLike):
        super().__init__()
        self.folder = Path(folder)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        save_lora_weights(self.model, self.folder / lora_checkpoint_name(epoch + 1))


def lora_checkpoint_name(epoch: int) -> str:
    """`epoch_007.lora.h5` for epoch 7 (counted from 1, as the weights' checkpoints)."""
    return f"epoch_{epoch:03d}{LORA_SUFFIX}"
