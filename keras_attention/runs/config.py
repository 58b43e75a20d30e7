"""The settings of a training run (`TrainConfig`).

`config.json` in a run folder is a `TrainConfig` as a dict; `tools/train.py` builds one from
its command line, `keras_attention.runs.folder` compares it with a folder's, and
`keras_attention.runs.train` trains it. The settings left unset come from the recipe that
the corpus's size picks (`keras_attention.runs.recipes`).
"""

import dataclasses
import math
import os
import typing

from keras_attention.core.checks import check_int_at_least, check_positive_int
from keras_attention.core.file_checks import check_json_fields, read_json_object
from keras_attention.models.presets import PRESETS
from keras_attention.runs import fine_tune
from keras_attention.runs.recipes import (
    LEGACY_RECIPES,
    RECIPE_NAMES,
    RECIPE_SETTINGS,
    CorpusStats,
    choose_recipe,
    follow_schedule,
    for_this_machine,
    recipe_settings,
)

MIXED_PRECISION_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# The settings that every `config.json` holds: those of the library's first version. The
# others were added later, and a run's `config.json` written before lacks them
# (`runs.folder.ABSENT_MEANS` says what that means); none was ever removed or renamed.
ALWAYS_SAVED = (
    "output_dir", "dataset", "data_dir", "preset", "model_overrides", "vocabulary_size",
    "epochs", "max_tokens", "max_length", "warmup_steps", "learning_rate_scale",
    "label_smoothing", "devices", "jit_compile", "mixed_precision", "seed",
)  # fmt: skip


# The settings that name files or folders; a run stores them absolute (`with_absolute_paths`).
PATH_SETTINGS = ("train", "valid", "test", "data_dir", "init_from")


def absolute_path(value: object) -> object:
    """`value` with every path in it (a string, or lists of them) made absolute; `None` and
    other values as they are. A glob stays a glob, absolute.

    Example:

    >>> absolute_path(["/data/a.en", "/data/a.de"])
    ['/data/a.en', '/data/a.de']
    >>> absolute_path(None) is None
    True
    """
    if isinstance(value, str) and value:
        return os.path.abspath(value)
    if isinstance(value, list | tuple):
        return [absolute_path(item) for item in value]
    return value


@dataclasses.dataclass
class TrainConfig:
    """Everything a training run needs; saved as `config.json` in the output folder.

    Attributes:
        output_dir: the run's folder (config, tokenizer, backups, checkpoints, logs, model).
        dataset: a corpus known by name, `"generated"`, `"multi30k"` or `"shards"`
            (`keras_attention.data.datasets`); `None`: the files of `train`, or
            `"generated"` without them.
        data_dir: the named corpus's folder (Multi30k's is downloaded when `None`).
        train: the training files, `[[source, target], ...]`, each a path or a glob
            (plain text or gzip); several pairs, or globs, for a sharded corpus.
        valid: the validation files, `[source, target]`; `None`: held out of `train`
            (`keras_attention.data.held_out`) and written into the run's `data/` folder.
        test: the test files, as `valid`.
        source_lang: the source language (`None`: the source files' suffix, if it is a
            language code); recorded in `config.json`, `tokenizer.json` and the export.
        target_lang: the target language, as `source_lang`.
        recipe: the recipe of the settings left unset (`keras_attention.runs.recipes`);
            `None`: the one the corpus's size picks.
        stream: stream the training files instead of reading them into memory (`None`:
            when they are larger than `STREAM_BYTES`, or for `"shards"`).
        train_pairs: use only the first `train_pairs` training pairs (`None`: all).
        preset: model size (`"tiny"`, `"small"`, `"base"`, `"big"`; default: the recipe's).
        model_overrides: constructor arguments that replace the preset's (merged over the
            recipe's).
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
            `"mixed_bfloat16"` (float32 weights either way); `None`: the recipe's
            (bfloat16 for Multi30k). The checkpoints and the export hold float32 weights.
        lowercase: train on lowercased sentences, with a recaser learned from the training
            targets giving the translations their capitals back (`Recaser`; the tokenizer
            lowercases, so the export takes and gives cased text as any other); `None`:
            the recipe's (on for Multi30k).
        subword_sampling: subword regularization (Kudo, 2018): every epoch segments the
            training pairs afresh, sampling each sentence's subwords with this smoothing
            exponent, in (0, 1] (`SubwordTokenizer.sample`); 0 takes the best segmentation
            (`None`: the recipe's). Not for a streamed corpus (`"shards"`).
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
        init_from: a finished run folder to fine-tune (`keras_attention.runs.fine_tune`):
            its weights, tokenizer (copied) and model settings, the fine-tuning recipe.
        lora_rank: with `init_from`, train only LoRA kernels of this rank on the attention's
            query and value projections (`Transformer.enable_lora`); the run also saves them
            as `adapter.lora.h5`.
        patience: stop once the validation loss has not improved for this many epochs
            (`None`: train every epoch; the fine-tuning recipe's is 3).
        force_language_pair: with `init_from`, allow a language pair other than its run's.

    The fields that default to `None` take the recipe's value (`resolved()`).
    """

    output_dir: str = "runs/translator"
    dataset: str | None = None
    data_dir: str | None = None
    train: list[list[str]] | None = None
    valid: list[str] | None = None
    test: list[str] | None = None
    source_lang: str | None = None
    target_lang: str | None = None
    recipe: str | None = None
    stream: bool | None = None
    train_pairs: int | None = None
    preset: str | None = None
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
    init_from: str | None = None
    lora_rank: int | None = None
    patience: int | None = None
    force_language_pair: bool = False

    def with_absolute_paths(self) -> "TrainConfig":
        """A copy whose files and folders (`PATH_SETTINGS`) are absolute, resolved from the
        working folder: the `config.json` of a run means the same files wherever it is read.

        Example:

        >>> config = TrainConfig(train=[["c.en", "c.de"]]).with_absolute_paths()
        >>> config.train == [[os.path.abspath("c.en"), os.path.abspath("c.de")]]
        True
        """
        return dataclasses.replace(
            self, **{name: absolute_path(getattr(self, name)) for name in PATH_SETTINGS}
        )

    def resolved(self, stats: CorpusStats | None = None) -> "TrainConfig":
        """A copy with every `None` setting filled in from the recipe: `recipe` if set,
        else the one `choose_recipe` picks for `stats`, else (no corpus measured) the
        recipe a named dataset had before the rule (`LEGACY_RECIPES`). Given settings win;
        the ones that follow the schedule's length follow a given one (`follow_schedule`).

        Raises:
            ValueError: for an unknown recipe or dataset.
        """
        dataset = self.dataset
        if dataset is None and self.train is None:
            dataset = "generated"
        if dataset is not None and dataset not in LEGACY_RECIPES:
            raise ValueError(
                f"dataset must be one of {sorted(LEGACY_RECIPES)}; got dataset={dataset!r}"
            )
        recipe = self.recipe
        if self.init_from is not None:
            if recipe not in (None, fine_tune.RECIPE):
                raise ValueError(
                    f"recipe={recipe!r}: a run fine-tuned from init_from={self.init_from} "
                    "follows the fine-tuning recipe (give its settings instead)"
                )
            recipe = fine_tune.RECIPE
            settings = fine_tune.fine_tune_settings(fine_tune.parent_settings(self.init_from))
        else:
            if recipe is None:
                recipe = choose_recipe(stats) if stats is not None else LEGACY_RECIPES[dataset]
            settings = for_this_machine(recipe_settings(recipe, stats))
        given = {
            name: getattr(self, name)
            for name in RECIPE_SETTINGS
            if getattr(self, name) is not None and name != "model_overrides"
        }
        if self.train_steps is not None:
            given.pop("epochs", None)  # derived from the steps below
        patience = settings.pop("patience", None) if self.patience is None else self.patience
        filled = follow_schedule(settings, given)
        filled["patience"] = patience
        # Model overrides merge: the user's win over the recipe's.
        filled["model_overrides"] = {**settings["model_overrides"], **(self.model_overrides or {})}
        stream = self.stream
        if stream is None:
            stream = stats.streamed if stats is not None else dataset == "shards"
        train_steps = filled.get("train_steps")
        if train_steps is not None:
            every = filled.get("save_every_steps") or train_steps
            filled["save_every_steps"] = every
            if isinstance(train_steps, int) and isinstance(every, int) and every > 0:
                filled["epochs"] = train_steps // every  # rounds
        return dataclasses.replace(self, dataset=dataset, recipe=recipe, stream=stream, **filled)

    def _validate_steps(self) -> None:
        if self.train_steps is None:
            if self.stream:
                raise ValueError(
                    "the training corpus is streamed (stream=True): it trains by steps, "
                    "give train_steps"
                )
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
        if value and self.stream:
            raise ValueError(
                "subword_sampling needs a corpus in memory; the training corpus is streamed "
                f"(got subword_sampling={value!r})"
            )

    def _validate_fine_tuning(self) -> None:
        check_positive_int("patience", self.patience, allow_none=True)
        check_positive_int("lora_rank", self.lora_rank, allow_none=True)
        if self.lora_rank is not None and self.init_from is None:
            raise ValueError(f"lora_rank={self.lora_rank} needs init_from (a trained run to adapt)")
        if not isinstance(self.force_language_pair, bool):
            raise ValueError(
                f"force_language_pair must be true or false; got {self.force_language_pair!r}"
            )

    def _validate_corpus(self) -> None:
        fine_tuning = self.init_from is not None and self.recipe == fine_tune.RECIPE
        if self.recipe not in RECIPE_NAMES and not fine_tuning:
            raise ValueError(
                f"recipe must be one of {list(RECIPE_NAMES)}; got recipe={self.recipe!r}"
            )
        if not isinstance(self.stream, bool):
            raise ValueError(f"stream must be true or false; got stream={self.stream!r}")
        for name in ("source_lang", "target_lang"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a language code or null; got {name}={value!r}")
        pairs = [("train", pair) for pair in self.train or []] + [
            (name, getattr(self, name)) for name in ("valid", "test") if getattr(self, name)
        ]
        if self.train is not None and not isinstance(self.train, list):
            pairs = [("train", self.train)]
        for name, pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2) or not all(
                isinstance(path, str) and path for path in pair
            ):
                raise ValueError(f"{name} must be [source, target] files; got {name}={pair!r}")
        if self.train is not None and self.dataset is not None:
            raise ValueError(
                f"train files and dataset={self.dataset!r} exclude each other: give one corpus"
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
        self._validate_fine_tuning()
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
        self._validate_corpus()
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


def check_saved_config(saved: dict, path: str | os.PathLike) -> None:
    """Checks a run's saved settings (its `config.json`, read from `path`) against
    `TrainConfig`'s fields: every value of the type its annotation says (an integer is not a
    string nor a boolean), the settings of `ALWAYS_SAVED` there, no field that `TrainConfig`
    lacks. Values are not checked further (`TrainConfig.validate` does that).

    Raises:
        CorruptFileError: naming `path` and the field at fault.
    """
    fields = typing.get_type_hints(TrainConfig)
    check_json_fields(saved, fields, path, required=ALWAYS_SAVED, allow_unknown=False)


def read_train_config(path: str | os.PathLike) -> TrainConfig:
    """The `TrainConfig` saved in a run's `config.json` at `path`, checked
    (`check_saved_config`); the settings it lacks (added after it was written) are
    `TrainConfig`'s defaults.

    Raises:
        FileNotFoundError: naming `path` if it is missing.
        CorruptFileError: naming `path` if it is not a JSON object or a field is missing,
            unknown or of another type.
    """
    saved = read_json_object(path)
    check_saved_config(saved, path)
    return TrainConfig(**saved)
