"""Train a Transformer translator with the paper's recipe (the main command).

    python tools/train.py              # the generated corpus, about 5 minutes on 2 CPU cores
    python tools/train.py --train my.de my.fr --run-dir runs/de-fr   # your own files
    python tools/train.py --train 'big/train.*.en.gz' 'big/train.*.de.gz' \
        --valid big/dev.en big/dev.de --test big/test.en big/test.de   # shards, by glob
    python tools/train.py --dataset multi30k --data-dir data/multi30k  # the Multi30k files

Your own corpus: --train SOURCE TARGET (plain or gzip, a glob or --train again for more
shards; line i of one translates line i of the other). The languages are the files'
suffixes when those are language codes (else --source-lang/--target-lang). Without --valid or
--test, a seeded 5% of the training pairs (at most 3,000) is held out for each and written to
the run's data/ folder; pairs whose source is a validation or test source are removed from
training. The settings you do not give come from the recipe that the corpus's size picks
(docs/own-data.md: the table); the run prints them, one line each, as it starts.

Everything lands in --run-dir: config.json, tokenizer.model, backup/, checkpoints/, logs/
(TensorBoard), training_log.csv, validation_bleu.json, bleu.json, test_metrics.json,
learning_curve.png, model.keras and export/. A run folder belongs to one configuration: the
same command started again there (after a kill, say) resumes the run, another is refused with
the settings that differ (--overwrite removes the old run's files and starts afresh). Errors
in the arguments or the corpus are one line, `error: ...`, found before anything is written.
A run started again first checks the files it goes on from: a damaged backup falls back to
its previous copy, a damaged checkpoint is written again from the backup that holds its
weights (both logged as warnings); what cannot be recovered is named in one line, before
any epoch trains.

With TF_CONFIG set to a cluster of several workers, start the same command on every worker:
they train together under MultiWorkerMirroredStrategy. The chief writes --run-dir (which
must be on storage all workers see); the others write to temporary folders, removed at the end.
"""

import argparse
import dataclasses
import json
import logging
import re
import sys
import time
from typing import TYPE_CHECKING

from keras_attention_cli.arguments import (
    ArgumentParser,
    fraction,
    int_at_least,
    non_negative_float,
)
from keras_attention_cli.errors import fail, run_command, user_errors
from keras_attention_cli.files import check_output_dir
from keras_attention_cli.old_spellings import add_old_spellings

if TYPE_CHECKING:
    from keras_attention.runs.config import TrainConfig
    from keras_attention.runs.train import TrainResult
    from keras_attention.training.divergence import TrainingDivergedError

# The names the library knows, written here so that the arguments parse before the library
# loads; tests/system/test_deferred_import.py checks that they are the library's.
RECIPE_NAMES = ("closed-vocabulary", "small", "medium", "large")  # runs.recipes.RECIPE_NAMES
PRESET_NAMES = ("base", "big", "small", "tiny")  # models.presets.PRESETS
DATASET_NAMES = ("generated", "multi30k", "shards")  # data.datasets.DATASETS
MIXED_PRECISION_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")  # runs.config's
# The `TrainConfig` fields whose options default to `None`, "not given": the config's own
# default then applies.
CONFIG_DEFAULTS = ("output_dir", "max_length", "label_smoothing", "seed", "connect_timeout")
# The option of each `TrainConfig` field whose name differs from `--<field-name>`.
OPTIONS = {
    "model_overrides": "--override",
    "jit_compile": "--jit",
    "output_dir": "--run-dir",
    "lora_rank": "--lora",
}
CORPUS_FIELDS = ("train", "valid", "test")


def option(field: str) -> str:
    """The command-line option that sets `TrainConfig` field `field`."""
    return OPTIONS.get(field, "--" + field.replace("_", "-"))


def name_options(message: str) -> str:
    """`message` with the `TrainConfig` fields it names written as their options, e.g.
    `epochs must be ...; got epochs=0` as `--epochs must be ...; got --epochs=0`."""
    # Not the corpus fields: "train", "valid" and "test" are ordinary words too.
    from keras_attention.runs.config import TrainConfig

    fields = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in CORPUS_FIELDS]
    names = "|".join(sorted(fields, key=len)[::-1])
    # Not a part of a file path or of a longer word.
    pattern = rf"(?<![\w/.\-])({names})(?![\w/.\-])"
    return re.sub(pattern, lambda match: option(match.group(1)), message)


def parse_override(item: str) -> tuple[str, object]:
    """`NAME=JSON` as `(name, value)`; fails naming `--override` if it is not."""
    name, _, value = item.partition("=")
    if not name or not value:
        fail(f"--override must look like NAME=JSON; got {item!r}")
    try:
        return name, json.loads(value)
    except ValueError as error:
        fail(
            f"--override {item}: the value is not JSON ({error}); a string needs quotes, "
            f"e.g. --override 'activation=\"gelu\"'"
        )


def _rounds_between_validations(parser: ArgumentParser, args: argparse.Namespace) -> int:
    """`--validate-every-steps` in rounds of `--save-every-steps` (all the steps by default)."""
    if args.train_steps is None:
        parser.error("--validate-every-steps needs --train-steps (with --epochs, use "
                     "--validation-bleu-every)")  # fmt: skip
    if args.validation_bleu_every is not None:
        parser.error("--validate-every-steps and --validation-bleu-every exclude each other")
    round_steps = args.save_every_steps or args.train_steps
    if args.validate_every_steps % round_steps:
        parser.error(
            f"--validate-every-steps {args.validate_every_steps} must be a multiple of the "
            f"{round_steps} steps of a round (--save-every-steps): validation ends a round"
        )
    return args.validate_every_steps // round_steps


def parse_args(argv: list[str] | None = None) -> tuple["TrainConfig", bool, bool]:
    """The command line as a `TrainConfig`, whether to export and evaluate after training,
    and whether to overwrite another run in the output folder."""
    positive = int_at_least(1)
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    files = dict(nargs=2, metavar=("SOURCE", "TARGET"))
    parser.add_argument(
        "--train",
        action="append",
        default=None,
        help="training files, plain or .gz, a path or a quoted glob per side (repeat for more "
        "shards); line i of SOURCE translates line i of TARGET",
        **files,
    )
    parser.add_argument(
        "--valid", help="validation files (default: 5%% of --train held out)", **files
    )
    parser.add_argument("--test", help="test files (default: 5%% of --train held out)", **files)
    parser.add_argument(
        "--source-lang", default=None, help="source language (default: the source suffix)"
    )
    parser.add_argument(
        "--target-lang", default=None, help="target language (default: the target suffix)"
    )
    parser.add_argument(
        "--recipe",
        choices=RECIPE_NAMES,
        default=None,
        help="settings for the options not given (default: picked by the corpus's size)",
    )
    parser.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stream the training files instead of reading them (default: above 512 MB)",
    )
    parser.add_argument(
        "--preset",
        choices=PRESET_NAMES,
        default=None,
        help="model size (default: the recipe's)",
    )
    parser.add_argument(
        "--dataset",
        choices=DATASET_NAMES,
        default=None,
        help="a corpus known by name instead of --train (default without --train: generated)",
    )
    parser.add_argument(
        "--data-dir", default=None, help="the named corpus's folder (Multi30k: downloaded if unset)"
    )
    parser.add_argument(
        "--run-dir", dest="output_dir", default=None,
        help="the run folder (default: runs/translator)",
    )  # fmt: skip
    add_old_spellings(parser, "train", {"--run-dir": "output_dir"})
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="remove the files of another run in --run-dir and start afresh",
    )
    parser.add_argument(
        "--train-pairs", type=positive, default=None, help="use only the first N training pairs"
    )
    parser.add_argument("--epochs", type=positive, default=None, help="default: the recipe's")
    parser.add_argument(
        "--max-tokens",
        type=positive,
        default=None,
        help="padded tokens per batch (default: the recipe's)",
    )
    parser.add_argument(
        "--max-length",
        type=int_at_least(2),
        default=None,
        help="longest sequence kept, in subword tokens",
    )
    parser.add_argument(
        "--vocabulary-size",
        type=int_at_least(5),
        default=None,
        help="SentencePiece vocabulary (default: the recipe's)",
    )
    parser.add_argument("--warmup-steps", type=positive, default=None, help="default: the recipe's")
    parser.add_argument(
        "--learning-rate-scale",
        type=float,
        default=None,
        help="multiplier of the paper's schedule (default: the recipe's)",
    )
    parser.add_argument(
        "--cooldown-epochs",
        type=int_at_least(0),
        default=None,
        help="the learning rate falls linearly to zero over the last this many epochs "
        "(default: the recipe's)",
    )
    parser.add_argument(
        "--label-smoothing", type=non_negative_float, default=None,
        help="label smoothing of the loss (default: 0.1, the paper's)",
    )  # fmt: skip
    parser.add_argument(
        "--devices",
        nargs="*",
        default=None,
        help="devices for MirroredStrategy, e.g. /gpu:0 /gpu:1",
    )
    parser.add_argument(
        "--jit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile the train step with XLA (default: on with a GPU, off on CPU)",
    )
    parser.add_argument(
        "--mixed-precision",
        choices=MIXED_PRECISION_POLICIES,
        default=None,
        help="dtype policy of training; the weights stay float32 (default: the recipe's)",
    )
    parser.add_argument(
        "--lowercase",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="train on lowercased text; a recaser learned from the training targets gives "
        "the translations their capitals back (default: the recipe's, on for multi30k)",
    )
    parser.add_argument(
        "--subword-sampling",
        type=fraction,
        default=None,
        metavar="ALPHA",
        help="subword regularization: segment the training pairs afresh every epoch, "
        "sampling the subwords with this smoothing exponent in (0, 1] (smaller: more, "
        "shorter pieces); 0 is off (default: the recipe's, off)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="model argument replacing the preset's, e.g. --override dropout=0.1",
    )
    parser.add_argument(
        "--seed", type=int_at_least(0), default=None,
        help="seed of the corpus, the shuffling, the subword sampling and the weights (default: 0)",
    )  # fmt: skip
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        help="seconds the workers of a TF_CONFIG cluster wait for each other to join",
    )
    parser.add_argument(
        "--validation-bleu-every",
        type=int_at_least(0),
        default=None,
        help="translate the validation split every N epochs, keep the best (0: off)",
    )
    parser.add_argument(
        "--validation-bleu-sentences",
        type=positive,
        default=None,
        help="translate a fixed, seeded subset of this many validation sentences",
    )
    parser.add_argument(
        "--average",
        type=int_at_least(2),
        nargs="*",
        default=None,
        metavar="K",
        help="end-of-run candidates: averages of the last K and of the best K checkpoints",
    )
    parser.add_argument("--beam-size", type=positive, default=None, help="default: the recipe's")
    parser.add_argument(
        "--alpha",
        type=non_negative_float,
        default=None,
        help="length penalty (default: the recipe's)",
    )
    parser.add_argument(
        "--backup-every-steps",
        type=positive,
        default=None,
        help="also back up every N steps (a killed run loses at most N steps)",
    )
    parser.add_argument(
        "--train-steps",
        type=positive,
        default=None,
        help="train by steps (batches) instead of --epochs, in rounds of --save-every-steps "
        "(each a checkpoint, log row and validation; --cooldown-epochs, --average and "
        "--validation-bleu-every count rounds); needed by --dataset shards",
    )
    parser.add_argument(
        "--save-every-steps", type=positive, default=None, help="steps per round (default: all)"
    )
    parser.add_argument(
        "--validate-every-steps",
        type=positive,
        default=None,
        help="with --train-steps: translate the validation split every N steps, a multiple of "
        "--save-every-steps (sets --validation-bleu-every in rounds)",
    )
    parser.add_argument(
        "--keep-checkpoints",
        type=positive,
        default=None,
        help="keep only the last N epoch (round) checkpoints (default: all)",
    )
    parser.add_argument(
        "--accumulate-steps",
        type=positive,
        default=1,
        help="batches per update: gradient accumulation, the loss normalised by all the "
        "update's target tokens (the paper's 25,000 per update on fewer devices)",
    )
    tuning = parser.add_argument_group("fine-tuning a finished run")
    tuning.add_argument(
        "--init-from", default=None, metavar="RUN",
        help="start from RUN's weights, tokenizer and model settings, with the fine-tuning "
        "recipe (a short warm-up to half RUN's peak learning rate, at most 20 epochs, "
        "--patience 3); every option may still be given",
    )  # fmt: skip
    tuning.add_argument(
        "--lora", type=positive, default=None, metavar="RANK",
        help="with --init-from: train only LoRA kernels of this rank on the attention's "
        "query and value projections (saved as adapter.lora.h5; merged in model.keras)",
    )  # fmt: skip
    tuning.add_argument(
        "--patience", type=positive, default=None, metavar="N",
        help="stop once the validation loss has not improved for N epochs (default: off; "
        "3 with --init-from)",
    )  # fmt: skip
    tuning.add_argument(
        "--force-language-pair", action="store_true",
        help="with --init-from: allow a language pair other than RUN's",
    )  # fmt: skip
    parser.add_argument(
        "--export",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="export the SavedModel, reload it, translate examples and print sacreBLEU",
    )
    args = parser.parse_args(argv)
    if args.train is not None and args.dataset is not None:
        parser.error("--train and --dataset exclude each other: give your files or a name")
    if args.init_from is None and (args.lora is not None or args.force_language_pair):
        parser.error("--lora and --force-language-pair: only with --init-from RUN")
    if args.init_from is not None and args.recipe is not None:
        parser.error("--recipe: a run with --init-from follows the fine-tuning recipe; give "
                     "its settings instead")  # fmt: skip
    if args.train_steps is not None and args.epochs is not None:
        parser.error("--epochs and --train-steps exclude each other (rounds replace epochs)")
    if args.validate_every_steps is not None:
        args.validation_bleu_every = _rounds_between_validations(parser, args)
    overrides = dict(parse_override(item) for item in args.override)
    # Imported once the arguments parse: the package loads Keras and TensorFlow.
    from keras_attention.runs.config import TrainConfig

    given = {name: getattr(args, name) for name in CONFIG_DEFAULTS}
    config = TrainConfig(
        **{name: value for name, value in given.items() if value is not None},
        dataset=args.dataset,
        data_dir=args.data_dir,
        train=args.train,
        valid=args.valid,
        test=args.test,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        recipe=args.recipe,
        stream=args.stream,
        train_pairs=args.train_pairs,
        preset=args.preset,
        model_overrides=overrides,
        vocabulary_size=args.vocabulary_size,
        epochs=args.epochs,
        max_tokens=args.max_tokens,
        warmup_steps=args.warmup_steps,
        learning_rate_scale=args.learning_rate_scale,
        cooldown_epochs=args.cooldown_epochs,
        devices=args.devices,
        jit_compile=args.jit,
        mixed_precision=args.mixed_precision,
        lowercase=args.lowercase,
        subword_sampling=args.subword_sampling,
        validation_bleu_every=args.validation_bleu_every,
        validation_bleu_sentences=args.validation_bleu_sentences,
        average=args.average,
        beam_size=args.beam_size,
        alpha=args.alpha,
        backup_every_steps=args.backup_every_steps,
        accumulate_steps=args.accumulate_steps,
        train_steps=args.train_steps,
        save_every_steps=args.save_every_steps,
        keep_checkpoints=args.keep_checkpoints,
        init_from=args.init_from,
        lora_rank=args.lora,
        patience=args.patience,
        force_language_pair=args.force_language_pair,
    )
    return config, args.export, args.overwrite


def divergence_message(error: "TrainingDivergedError", config: "TrainConfig") -> str:
    """The one-line error of a run whose training diverged, with the options to change."""
    return (
        f"{error.summary}: {error.reason}. Nothing of the diverged steps was saved: the run "
        "folder keeps its last backup and checkpoints, and no model.keras or export. Try a "
        f"lower --learning-rate-scale (this run: {config.learning_rate_scale}) or more "
        f"--warmup-steps (this run: {config.warmup_steps}), with --overwrite to start again"
    )


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # TensorFlow's INFO lines (one per collective set up across workers) drown the run's own.
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    config, export, overwrite = parse_args(argv)
    with user_errors():
        check_output_dir(config.output_dir, "--run-dir")
        from keras_attention.runs.output_guard import check_run_output

        check_run_output(config)  # none of its inputs, no other run's files
    from keras_attention.core.file_checks import CorruptFileError
    from keras_attention.runs.prepare import prepare_run
    from keras_attention.runs.train import train_prepared
    from keras_attention.training.divergence import TrainingDivergedError

    started = time.monotonic()
    # User errors (settings, corpus files, another run's folder) are all found here, before
    # anything is written; errors after that are bugs, with their traceback.
    with user_errors():
        try:
            run = prepare_run(config, overwrite)
        except CorruptFileError:
            raise  # it names a file and its fields, not options
        except ValueError as error:
            raise ValueError(name_options(str(error))) from None
    for line in run.settings:
        print(line)
    sys.stdout.flush()
    try:
        result = train_prepared(run)
    except TrainingDivergedError as error:
        fail(divergence_message(error, run.config))
    try:
        report(result, export, verbose="--verbose" in (sys.argv[1:] if argv is None else argv))
    finally:
        result.cleanup()
    print(f"wall-clock time of this process: {(time.monotonic() - started) / 60:.1f} min")


def report(result: "TrainResult", export: bool, verbose: bool = False) -> None:
    """Prints the run's results; exports, reloads and scores the translator if `export`.

    The settings are one short line (all of them, as JSON, with `verbose`: they are in the
    run's config.json too); scores and metrics are words and rounded figures
    (`runs.report_lines`).
    """
    from keras_attention.runs.report_lines import config_line, metrics_text, validation_line
    from keras_attention.runs.serving_check import export_and_evaluate

    config = result.config
    if not result.is_chief:
        print("non-chief worker: its files went to a temporary folder, removed at the end")
    settings = dataclasses.asdict(config)
    print("config:", json.dumps(settings) if verbose else config_line(settings).split(": ", 1)[1])
    # A metric that was not a number is None (n/a).
    print("test:", metrics_text(result.test_metrics))
    print("model:", result.model_path)
    if result.selection is not None:
        chosen = result.selection
        print(f"final weights, chosen on the validation split: {chosen.name}")
        for name, scores in chosen.validation.items():
            print("  " + validation_line(name, scores))
    if not export:
        return
    check = export_and_evaluate(result)
    print("exported:", check.export_path)
    print("translations by the reloaded SavedModel:")
    for source, translation in check.examples:
        print(f"  {source}\n    -> {translation}")
    print(
        f"sacreBLEU on the test split (beam {config.beam_size}, alpha "
        f"{config.alpha}, from the SavedModel):"
    )
    print(check.scores.summary())


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-train` and `tools/train.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv), "the run folder resumes with the same command")
