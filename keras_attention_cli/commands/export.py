"""Export a trained translator as a SavedModel for TensorFlow Serving.

    python tools/export.py --run-dir runs/translator   # the next free version (2 after a run's)
    python tools/export.py --run-dir runs/translator --output serving/translator
    python tools/export.py --run-dir runs/translator --preset-dir presets/en-de

Writes OUTPUT/<version>/ (--output, default RUN_DIR/export; the next free version unless
--version), atomically, with the `serving_default`, `greedy`, `n_best`, `sample` and `score`
signatures (keras_attention.serving.export) and TF Serving's warm-up requests (the first lines
of --warmup-file, else a few built-in English sentences). The beam width and length penalty
default to the run's (config.json; 4 and 0.6 for older runs). A request is decoded
--chunk-size sentences at a time (0: all at once). The export folder and the warm-up file are
checked before any work; errors are one line, `error: ...`, naming the argument or file (a
missing or corrupt model, tokenizer or config.json), with exit status 2. The old spellings
(the run folder positionally, --export-dir) still work, with a deprecation line on stderr.
At a terminal, stderr shows that the export is under way and how long it took.

`--ensemble-with OTHER_RUN` (repeatable) exports RUN_DIR's model and each other run's model
as one ensemble (their log-probabilities averaged at every step), in one SavedModel; the runs
must share a tokenizer byte for byte (fine-tuned runs of one run do).

With --preset-dir, writes instead a preset folder in keras-hub's layout (config.json,
model.weights.h5, metadata.json, assets/tokenizer/), atomically, which
`Translator.from_preset(PRESET_DIR)` and `tools/translate.py --model PRESET_DIR` load; it must
not exist yet (or be empty). Its metadata.json keeps the beam width and length penalty.
"""

import argparse
import os

from keras_attention_cli.arguments import ArgumentParser, int_at_least, non_negative_float
from keras_attention_cli.errors import UserError, run_command, user_errors
from keras_attention_cli.files import check_output_dir, read_input_lines
from keras_attention_cli.old_spellings import add_old_spellings, add_run_dir, resolve_run_dir

# Warm-up requests: the first sentence alone, then this many together (per signature).
WARMUP_LINES = 8


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments (`output` filled in); argument errors and an export folder
    that cannot be written exit with one line, `error: ...`, before any work."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_run_dir(parser, "a folder written by tools/train.py")
    parser.add_argument("--model-file", default="model.keras", help="e.g. averaged.keras")
    parser.add_argument(
        "--output", default=None, help="the SavedModel's folder, one version per subfolder "
        "(default: RUN_DIR/export)",
    )  # fmt: skip
    add_old_spellings(parser, "export", {"--output": "output"})
    parser.add_argument(
        "--preset-dir", default=None, help="write a preset folder (keras-hub's layout) instead"
    )
    parser.add_argument(
        "--version", type=int_at_least(0), default=None,
        help="the version folder to write (default: the next free one)",
    )  # fmt: skip
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")
    parser.add_argument(
        "--ensemble-with", action="append", default=[], metavar="RUN",
        help="another run folder to decode with RUN_DIR as one ensemble (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--beam-size", type=int_at_least(1), default=None, help="default: the run's, else 4"
    )
    parser.add_argument(
        "--alpha", type=non_negative_float, default=None, help="default: the run's, else 0.6"
    )
    parser.add_argument(
        "--max-source-length", type=int_at_least(2), default=128,
        help="longest source kept, in subword tokens; longer ones are cut (default: 128)",
    )  # fmt: skip
    parser.add_argument(
        "--chunk-size",
        type=int_at_least(0),
        default=None,
        # The translator's DEFAULT_CHUNK_SIZE, imported once the arguments parse (the
        # translator module loads TensorFlow); tests/system/test_deferred_import.py checks
        # that they agree.
        help="sentences decoded at once; 0: a whole request (default 64)",
    )
    parser.add_argument(
        "--warmup-file",
        default=None,
        help=f"text file whose first {WARMUP_LINES} non-blank lines make the warm-up requests",
    )
    parser.add_argument(
        "--model-dtype",
        action="store_true",
        help="compute as the model does (a mixed-precision run: bfloat16 or float16); "
        "default: a float32 copy of its weights, faster on CPU",
    )
    args = parser.parse_args(argv)
    resolve_run_dir(parser, args)
    if args.preset_dir is not None:
        check_preset_arguments(parser, args)
        return args
    # Imported once the arguments parse: the package loads Keras and TensorFlow.
    from keras_attention.runs import output_guard
    from keras_attention.serving.translator import DEFAULT_CHUNK_SIZE

    if args.chunk_size is None:
        args.chunk_size = DEFAULT_CHUNK_SIZE
    args.output = args.output or os.path.join(args.run_dir, "export")
    target = os.path.join(args.output, str(args.version))
    if args.version is not None and os.path.exists(target) and not args.overwrite:
        parser.error(f"{target} exists; pass --overwrite or another --version")
    with user_errors():
        check_output_dir(args.output, "--output")
        output_guard.check_output_folder(
            args.output, "--output", read_files(args),
            allowed=[os.path.join(args.run_dir, "export")],
        )  # fmt: skip
        args.warmup_sentences = None
        if args.warmup_file is not None:
            lines = [line for line in read_input_lines([args.warmup_file]) if line.strip()]
            if not lines:
                raise UserError(f"--warmup-file {args.warmup_file} has no non-blank line")
            args.warmup_sentences = lines[:WARMUP_LINES]
    return args


def check_preset_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses the SavedModel's options beside --preset-dir, and a --preset-dir that exists
    (not empty) or whose folder cannot be written, with one line, `error: ...`."""
    from keras_attention.models.preset_folder import check_new_preset_dir
    from keras_attention.runs.output_guard import check_output_folder

    export_only = {
        "--output": args.output is not None, "--version": args.version is not None,
        "--overwrite": args.overwrite, "--chunk-size": args.chunk_size is not None,
        "--warmup-file": args.warmup_file is not None, "--model-dtype": args.model_dtype,
    }  # fmt: skip
    given = [name for name, value in export_only.items() if value]
    if given:
        parser.error(f"{', '.join(given)}: only for a SavedModel export, not with --preset-dir")
    with user_errors():
        check_new_preset_dir(args.preset_dir)
        check_output_dir(os.path.dirname(os.path.abspath(args.preset_dir)), "--preset-dir")
        check_output_folder(args.preset_dir, "--preset-dir", read_files(args))


def read_files(args: argparse.Namespace) -> list[str]:
    """The run folder and the model file the export reads, that its output must not hold."""
    return [args.run_dir, os.path.join(args.run_dir, args.model_file)]


def save_preset(args: argparse.Namespace) -> None:
    """Writes the run as a preset folder (`save_run_as_preset`) and prints its path."""
    from keras_attention.core.progress import working
    from keras_attention.runs.preset_export import save_run_as_preset

    with user_errors(), working("saving the preset"):  # a missing or corrupt file; a full disk
        path = save_run_as_preset(
            args.run_dir, args.preset_dir, args.model_file, beam_size=args.beam_size,
            alpha=args.alpha,
        )  # fmt: skip
    print(f"saved preset {path}")


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    if args.preset_dir is not None:
        save_preset(args)
        return
    # Imported once the arguments are checked, so that their errors come first.
    from keras_attention.core.progress import working
    from keras_attention.runs.files import run_beam_search
    from keras_attention.runs.train import load_run
    from keras_attention.serving.export import export_translator
    from keras_attention.serving.translator import Translator

    with user_errors():  # a missing or corrupt config.json, model or tokenizer
        beam_size, alpha = run_beam_search(args.run_dir)
        model, tokenizer = load_run(args.run_dir, args.model_file)
        if args.ensemble_with:
            from keras_attention.decoding import Ensemble
            from keras_attention.models import Transformer
            from keras_attention.runs.decoders import check_same_tokenizer

            check_same_tokenizer([args.run_dir, *args.ensemble_with], "--ensemble-with")
            others = [Transformer.from_preset(other) for other in args.ensemble_with]
            model = Ensemble([model, *others])
    translator = Translator(
        model,
        tokenizer,
        beam_size if args.beam_size is None else args.beam_size,
        alpha if args.alpha is None else args.alpha,
        max_source_length=args.max_source_length,
        chunk_size=args.chunk_size or None,
    )
    with user_errors(OSError), working("exporting"):  # the version appeared meanwhile; a full disk
        path = export_translator(
            translator,
            args.output,
            args.version,
            overwrite=args.overwrite,
            warmup_sentences=args.warmup_sentences,
            dtype=None if args.model_dtype else "float32",
        )
    print(f"exported {path}")


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-export` and `tools/export.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv))
