"""Convert a trained translator to a CTranslate2 model, for fast CPU (and GPU) inference.

    python tools/convert_ctranslate2.py --run-dir runs/translator --output runs/translator/ct2
    python tools/convert_ctranslate2.py --run-dir runs/translator --output ct2_int8 \
        --quantization int8

Needs `pip install ctranslate2`. Writes the --output folder (model.bin, config.json,
shared_vocabulary.json) atomically: a failed conversion leaves nothing half-written. An
existing non-empty --output folder is refused unless --overwrite, and --overwrite replaces only a
CTranslate2 model. CTranslate2 takes SentencePiece pieces and appends `</s>` itself (see
keras_attention/serving/ctranslate2_converter.py). Errors are one line, `error: ...`, naming the
argument or file (a missing run folder, a missing or corrupt model or tokenizer, an output
folder that may not be written), with exit status 2. The old spellings (the run folder
positionally, --output-dir) still work, with a deprecation line on stderr.
"""

import argparse
import os

from keras_attention_cli.arguments import ArgumentParser
from keras_attention_cli.errors import run_command, user_errors
from keras_attention_cli.files import check_output_dir
from keras_attention_cli.old_spellings import add_old_spellings, add_run_dir, resolve_run_dir


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments; errors in them or in the output folder exit with one line,
    `error: ...`, before any work."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_run_dir(parser, "a folder written by tools/train.py")
    parser.add_argument("--output", default=None, help="the CTranslate2 model folder (required)")
    add_old_spellings(parser, "convert_ctranslate2", {"--output": "output"})
    parser.add_argument("--model-file", default="model.keras", help="e.g. averaged.keras")
    parser.add_argument(
        "--quantization",
        default=None,
        help="CTranslate2 weight type, e.g. int8, int8_float16, float16 (default: float32)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a CTranslate2 model in --output"
    )
    args = parser.parse_args(argv)
    resolve_run_dir(parser, args)
    if args.output is None:
        parser.error("the following arguments are required: --output")
    from keras_attention.runs.output_guard import check_output_folder
    from keras_attention.serving.ctranslate2_converter import (
        check_ctranslate2_output_dir,
        check_quantization,
    )

    with user_errors(ImportError, OSError, ValueError):
        check_quantization(args.quantization)
        check_output_dir(args.output, "--output")
        inputs = [args.run_dir, os.path.join(args.run_dir, args.model_file)]
        check_output_folder(args.output, "--output", inputs)
        check_ctranslate2_output_dir(args.output, args.overwrite)
        if not os.path.isdir(args.run_dir):
            raise FileNotFoundError(f"the run folder {args.run_dir} does not exist")
    return args


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    # Imported once the arguments are checked, so that their errors come first.
    from keras_attention.runs import load_run
    from keras_attention.serving.ctranslate2_converter import convert_to_ctranslate2

    # A missing or corrupt model or tokenizer; an output folder that appeared meanwhile.
    with user_errors(ImportError, OSError, ValueError):
        model, tokenizer = load_run(args.run_dir, args.model_file)
        path = convert_to_ctranslate2(
            model, tokenizer, args.output, args.quantization, args.overwrite
        )
    print(f"converted {path}")


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-convert-ctranslate2` and `tools/convert_ctranslate2.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv))
