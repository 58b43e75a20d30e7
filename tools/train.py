"""Train a Transformer translator with the paper's recipe (the main command).

    python tools/train.py              # the generated corpus, about 5 minutes on 2 CPU cores
    python tools/train.py --dataset multi30k --data-dir ../shared/data/multi30k --preset small

Everything lands in --output-dir: config.json, tokenizer.model, backup/ (a killed run started
again resumes from there), checkpoints/, logs/ (TensorBoard), training_log.csv, model.keras and
test_metrics.json.

With TF_CONFIG set to a cluster of several workers, start the same command on every worker:
they train together under MultiWorkerMirroredStrategy. The chief writes --output-dir (which
must be on storage all workers see); the others write to temporary folders, removed at the end.
"""

import argparse
import dataclasses
import json
import logging
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_attention.data.datasets import DATASETS
from keras_attention.models.presets import PRESETS
from keras_attention.translation_run import (
    TrainConfig,
    TrainResult,
    export_and_evaluate,
    train_translator,
)

DEFAULTS = TrainConfig()


def parse_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    """The command line as a `TrainConfig`, and whether to export and evaluate after training."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default=DEFAULTS.preset)
    parser.add_argument("--dataset", choices=DATASETS, default=DEFAULTS.dataset)
    parser.add_argument("--data-dir", default=None, help="Multi30k folder (downloaded if unset)")
    parser.add_argument("--output-dir", default=DEFAULTS.output_dir)
    parser.add_argument(
        "--train-pairs", type=int, default=None, help="use only the first N training pairs"
    )
    parser.add_argument("--epochs", type=int, default=None, help="default: per dataset")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="padded tokens per batch (default: per dataset)",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=DEFAULTS.max_length,
        help="longest sequence kept, in subword tokens",
    )
    parser.add_argument(
        "--vocabulary-size",
        type=int,
        default=None,
        help="SentencePiece vocabulary (default: chosen for the dataset)",
    )
    parser.add_argument("--warmup-steps", type=int, default=None, help="default: per dataset")
    parser.add_argument(
        "--learning-rate-scale",
        type=float,
        default=None,
        help="multiplier of the paper's schedule (default: per dataset)",
    )
    parser.add_argument("--label-smoothing", type=float, default=DEFAULTS.label_smoothing)
    parser.add_argument(
        "--devices",
        nargs="*",
        default=None,
        help="devices for MirroredStrategy, e.g. /gpu:0 /gpu:1",
    )
    parser.add_argument(
        "--jit",
        action=argparse.BooleanOptionalAction,
        default=DEFAULTS.jit_compile,
        help="compile the train step with XLA (default: on with a GPU, off on CPU)",
    )
    parser.add_argument(
        "--mixed-precision", choices=["mixed_float16", "mixed_bfloat16"], default=None
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="model argument replacing the preset's, e.g. --override dropout=0.1",
    )
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=DEFAULTS.connect_timeout,
        help="seconds the workers of a TF_CONFIG cluster wait for each other to join",
    )
    parser.add_argument(
        "--validation-bleu-every",
        type=int,
        default=None,
        help="translate the validation split every N epochs, keep the best (0: off)",
    )
    parser.add_argument(
        "--validation-bleu-sentences",
        type=int,
        default=None,
        help="translate a fixed, seeded subset of this many validation sentences",
    )
    parser.add_argument(
        "--average",
        type=int,
        nargs="*",
        default=None,
        metavar="K",
        help="end-of-run candidates: averages of the last K and of the best K checkpoints",
    )
    parser.add_argument("--beam-size", type=int, default=None, help="default: per dataset")
    parser.add_argument(
        "--alpha", type=float, default=None, help="length penalty (default: per dataset)"
    )
    parser.add_argument(
        "--backup-every-steps",
        type=int,
        default=None,
        help="also back up every N steps (a killed run loses at most N steps)",
    )
    parser.add_argument(
        "--export",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="export the SavedModel, reload it, translate examples and print sacreBLEU",
    )
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.override:
        name, _, value = item.partition("=")
        if not name or not value:
            parser.error(f"--override must look like NAME=JSON; got {item!r}")
        overrides[name] = json.loads(value)
    config = TrainConfig(
        output_dir=args.output_dir,
        dataset=args.dataset,
        data_dir=args.data_dir,
        train_pairs=args.train_pairs,
        preset=args.preset,
        model_overrides=overrides,
        vocabulary_size=args.vocabulary_size,
        epochs=args.epochs,
        max_tokens=args.max_tokens,
        max_length=args.max_length,
        warmup_steps=args.warmup_steps,
        learning_rate_scale=args.learning_rate_scale,
        label_smoothing=args.label_smoothing,
        devices=args.devices,
        jit_compile=args.jit,
        mixed_precision=args.mixed_precision,
        seed=args.seed,
        connect_timeout=args.connect_timeout,
        validation_bleu_every=args.validation_bleu_every,
        validation_bleu_sentences=args.validation_bleu_sentences,
        average=args.average,
        beam_size=args.beam_size,
        alpha=args.alpha,
        backup_every_steps=args.backup_every_steps,
    )
    return config, args.export


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # TensorFlow's INFO lines (one per collective set up across workers) drown the run's own.
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    config, export = parse_args(argv)
    started = time.monotonic()
    result = train_translator(config)
    try:
        report(result, export)
    finally:
        result.cleanup()
    print(f"wall-clock time of this process: {(time.monotonic() - started) / 60:.1f} min")


def report(result: TrainResult, export: bool) -> None:
    """Prints the run's results; exports, reloads and scores the translator if `export`."""
    config = result.config
    if not result.is_chief:
        print("non-chief worker: its files went to a temporary folder, removed at the end")
    print("config:", json.dumps(dataclasses.asdict(config)))
    print("test:", json.dumps({k: round(float(v), 4) for k, v in result.test_metrics.items()}))
    print("model:", result.model_path)
    if result.selection is not None:
        chosen = result.selection
        print(f"final weights, chosen on the validation split: {chosen.name}")
        for name, scores in chosen.validation.items():
            print(f"  {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    if not export:
        return
    check = export_and_evaluate(result)
    print("exported:", check.export_path)
    print("translations by the reloaded SavedModel:")
    for source, translation in check.examples:
        print(f"  {source}\n    -> {translation}")
    print(
        f"sacreBLEU on the {config.dataset} test split (beam {config.beam_size}, alpha "
        f"{config.alpha}, from the SavedModel):"
    )
    print(check.scores.summary())


if __name__ == "__main__":
    main()
