"""The settings of a training run (`TrainConfig`) and each corpus's defaults.

`config.json` in a run folder is a `TrainConfig` as a dict; `tools/train.py` builds one from
its command line, `keras_attention.runs.folder` compares it with a folder's, and
`keras_attention.runs.train` trains it.
"""

import dataclasses
import math

from keras_attention.core.checks import check_int_at_least, check_positive_int
from keras_attention.models.presets import PRESETS

MIXED_PRECISION_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
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
        cooldown_epochs=0,
        mixed_precision="float32",
        lowercase=False,
        subword_sampling=0.0,
        validation_bleu_every=1,
        validation_bleu_sentences=300,
        average=[3],
        beam_size=4,
        alpha=0.6,
        model_overrides={"num_encoder_layers": 3, "num_decoder_layers": 3, "dropout": 0.1},
    ),
    "multi30k": dict(
        vocabulary_size=4000,
        # bfloat16 with 48 epochs, the last 16 a linear cool-down: ahead of float32 with 41
        # epochs on validation, in about the same time (README, runs L1, LD0 and LB1).
        epochs=48,
        # Half the batch, twice the updates (the paper's schedule then peaks 1/sqrt(2) lower):
        # +0.94 Moses-tokenized validation BLEU over 4,096 tokens and 2,000 warm-up steps
        # (README, run B1 against LB0).
        max_tokens=2048,
        warmup_steps=4000,
        learning_rate_scale=2.5,
        cooldown_epochs=16,
        mixed_precision="mixed_bfloat16",
        # Lowercased training with a recaser: +1.2 validation BLEU (README, run L1).
        lowercase=True,
        subword_sampling=0.0,
        validation_bleu_every=4,
        validation_bleu_sentences=500,
        average=[10],
        beam_size=5,
        # Chosen on validation for lowercased models (README: 1.0 was chosen on cased ones).
        alpha=1.5,
        # Pre-LN: post-LN stalls at this peak learning rate (4.9e-3); see README.
        model_overrides={"norm_first": True},
    ),
    # Text shards too large for memory, streamed (`data_dir`: `train.*.en[.gz]` and their
    # `.de` twins, `val.en`/`val.de`, `test.en`/`test.de`); the paper's base settings,
    # trained by steps (`train_steps`, `save_every_steps`).
    "shards": dict(
        vocabulary_size=8000,
        epochs=1,
        max_tokens=4096,
        warmup_steps=4000,
        learning_rate_scale=1.0,
        cooldown_epochs=0,
        mixed_precision="float32",
        lowercase=False,
        subword_sampling=0.0,
        validation_bleu_every=1,
        validation_bleu_sentences=500,
        average=[5],
        beam_size=4,
        alpha=0.6,
        model_overrides={},
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
        cooldown_epochs: the learning rate falls linearly to zero over the last this many
            epochs (0: the paper's schedule to the end).
        label_smoothing: the paper's `epsilon_ls`.
        devices: devices for `MirroredStrategy` (`None`: every GPU, or the default device).
        jit_compile: compile the train step with XLA; `None` turns it on when a GPU is
            visible. On CPU it is off: with batches of thousands of tokens the matmuls
            dominate and XLA measured no faster here, while it compiles each batch shape for
            15-30 s (see `tools/benchmark.py train`).
        mixed_precision: the dtype policy of training, `"float32"`, `"mixed_float16"` or
            `"mixed_bfloat16"` (float32 weights either way); `None`: the dataset's default
            (bfloat16 for Multi30k). The checkpoints and the export hold float32 weights.
        lowercase: train on lowercased sentences, with a recaser learned from the training
            targets giving the translations their capitals back (`Recaser`; the tokenizer
            lowercases, so the export takes and gives cased text as any other); `None`:
            the dataset's default (on for Multi30k).
        subword_sampling: subword regularization (Kudo, 2018): every epoch segments the
            training pairs afresh, sampling each sentence's subwords with this smoothing
            exponent, in (0, 1] (`SubwordTokenizer.sample`); 0 takes the best segmentation
            (`None`: the dataset's default). Not for a streamed corpus (`"shards"`).
        seed: seed of the corpus, the shuffling, the subword sampling and the initial weights.
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
        train_steps: train this many steps (batches), in rounds of `save_every_steps`: each
            round is a Keras epoch (a checkpoint, a log row, a validation), so `epochs`,
            `cooldown_epochs` and `validation_bleu_every` count rounds; `None`: train by
            passes over the corpus (`epochs`). A streamed corpus (`"shards"`) needs it.
        save_every_steps: steps per round (default: `train_steps`, one round).
        keep_checkpoints: keep only the last this many epoch (round) checkpoints (`None`:
            all; at least the largest K of `average`).
        accumulate_steps: batches per optimizer update (gradient accumulation, each batch
            weighted by its share of the update's target tokens: `token_weighted_updates`);
            `warmup_steps` and the cool-down count updates, `backup_every_steps` batches.

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
    cooldown_epochs: int | None = None
    label_smoothing: float = 0.1
    devices: list[str] | None = None
    jit_compile: bool | None = None
    mixed_precision: str | None = None
    lowercase: bool | None = None
    subword_sampling: float | None = None
    seed: int = 0
    connect_timeout: float = 300.0
    validation_bleu_every: int | None = None
    validation_bleu_sentences: int | None = None
    average: list[int] | None = None
    beam_size: int | None = None
    alpha: float | None = None
    backup_every_steps: int | None = None
    accumulate_steps: int = 1
    train_steps: int | None = None
    save_every_steps: int | None = None
    keep_checkpoints: int | None = None

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
        if self.train_steps is not None:
            every = self.save_every_steps or self.train_steps
            filled["save_every_steps"] = every
            if isinstance(self.train_steps, int) and isinstance(every, int) and every > 0:
                filled["epochs"] = self.train_steps // every  # rounds
        return dataclasses.replace(self, **filled)

    def _validate_steps(self) -> None:
        if self.train_steps is None:
            if self.dataset == "shards":
                raise ValueError("dataset='shards' is streamed: it needs train_steps")
            if self.save_every_steps is not None:
                raise ValueError("save_every_steps needs train_steps")
            return
        check_positive_int("train_steps", self.train_steps)
        check_positive_int("save_every_steps", self.save_every_steps)
        if self.train_steps % self.save_every_steps:
            raise ValueError(
                "train_steps must be a multiple of save_every_steps (whole rounds); got "
                f"train_steps={self.train_steps}, save_every_steps={self.save_every_steps}"
            )
        if self.save_every_steps % self.accumulate_steps:
            raise ValueError(
                "save_every_steps must be a multiple of accumulate_steps (whole updates); "
                f"got save_every_steps={self.save_every_steps}, "
                f"accumulate_steps={self.accumulate_steps}"
            )

    def _validate_subword_sampling(self) -> None:
        value = self.subword_sampling
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ValueError(
                f"subword_sampling must be a number in [0, 1] (0: off); got "
                f"subword_sampling={value!r}"
            )
        if value and self.dataset == "shards":
            raise ValueError(
                "subword_sampling needs a corpus in memory; dataset='shards' is streamed "
                f"(got subword_sampling={value!r})"
            )

    def validate(self) -> None:
        """Raises `ValueError` naming the first bad field."""
        check_int_at_least("accumulate_steps", self.accumulate_steps, 1)
        self._validate_steps()  # first: `epochs` is derived from the steps
        check_positive_int("keep_checkpoints", self.keep_checkpoints, allow_none=True)
        largest = max(self.average or [0])
        if self.keep_checkpoints is not None and self.keep_checkpoints < largest:
            raise ValueError(
                f"keep_checkpoints={self.keep_checkpoints} is fewer than the {largest} "
                f"checkpoints that average={self.average} averages"
            )
        if self.mixed_precision not in MIXED_PRECISION_POLICIES:
            raise ValueError(
                f"mixed_precision must be one of {MIXED_PRECISION_POLICIES}; "
                f"got mixed_precision={self.mixed_precision!r}"
            )
        if not isinstance(self.lowercase, bool):
            raise ValueError(f"lowercase must be true or false; got lowercase={self.lowercase!r}")
        self._validate_subword_sampling()
        optional = ("train_pairs", "validation_bleu_sentences", "backup_every_steps")
        for name in ("epochs", "max_tokens", "max_length", "warmup_steps", "beam_size", *optional):
            check_positive_int(name, getattr(self, name), allow_none=name in optional)
        check_int_at_least("validation_bleu_every", self.validation_bleu_every, 0)
        check_int_at_least("accumulate_steps", self.accumulate_steps, 1)
        check_int_at_least("cooldown_epochs", self.cooldown_epochs, 0)
        if self.cooldown_epochs > self.epochs:
            raise ValueError(
                "cooldown_epochs must be <= epochs; got "
                f"cooldown_epochs={self.cooldown_epochs}, epochs={self.epochs}"
            )
        if not isinstance(self.average, list) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 2 for k in self.average
        ):
            raise ValueError(
                f"average must be a list of integers >= 2; got average={self.average!r}"
            )
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}; got preset={self.preset!r}")
        # More than the 4 special tokens.
        check_int_at_least("vocabulary_size", self.vocabulary_size, 5)
        if self.max_length < 2:
            raise ValueError(f"max_length must be >= 2; got max_length={self.max_length}")
        if self.max_tokens < self.max_length:
            raise ValueError(
                "max_tokens must be >= max_length so that the longest pair fits in a batch; "
                f"got max_tokens={self.max_tokens}, max_length={self.max_length}"
            )
        for name, low, high in (
            ("learning_rate_scale", 0.0, math.inf),
            ("label_smoothing", 0.0, 1.0),
            ("alpha", 0.0, math.inf),
            ("connect_timeout", 0.0, math.inf),
        ):
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            strict = name in ("learning_rate_scale", "connect_timeout")
            if not number or not (low < value if strict else low <= value) or not value < high:
                interval = f"> {low}" if strict else f">= {low}"
                raise ValueError(
                    f"{name} must be a finite number {interval}"
                    + (f" and < {high}" if high < math.inf else "")
                    + f"; got {name}={value!r}"
                )
        check_int_at_least("seed", self.seed, 0)
        if not isinstance(self.model_overrides, dict):
            raise ValueError(
                f"model_overrides must be a dict; got model_overrides={self.model_overrides!r}"
            )
