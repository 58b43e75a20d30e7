"""Translate sentences, one per line, from files or stdin, with a trained model or a SavedModel.

echo "A man rides a bike." | python tools/translate.py --run-dir runs/translator
python tools/translate.py --model runs/translator/export/1 sentences.txt
python tools/translate.py --model presets/en-de sentences.txt --output out.txt

Prints one translation per input line, in order (an empty line translates to an empty line),
on stdout or into --output. The model loads first; then the input (UTF-8) is read as it comes
and answered batch by batch, each batch written and flushed at once: a file of any size
translates in bounded memory, and a line typed at a terminal, or written into a pipe held
open, is answered without waiting for the end of the input. A batch holds --batch-size lines,
or fewer when no further line has arrived yet. Translating into a file (stdout redirected or
--output) shows its progress on stderr when stderr is a terminal.

--model takes a run folder, a preset folder (tools/export.py --preset-dir) or an exported
version folder, told apart by their files. With a run, the beam width and length penalty
default to the run's (config.json; 4 and 0.6 for older runs); with a preset folder, to its
metadata.json's. Errors are one line, `error: ...`, naming the argument or file (and line),
with exit status 2; input files are checked before the model loads, their text as it is read.
Reading a terminal, the tool says on stderr when the model has loaded and it is ready for
sentences (`ready: ...`); it says nothing when its input is a file or a pipe.
"""

import argparse
import os
import sys
from typing import TextIO

from keras_attention_cli.arguments import (
    ArgumentParser,
    add_model_arguments,
    add_search_arguments,
    int_at_least,
    resolve_model_argument,
)
from keras_attention_cli.errors import UserError, run_command, user_errors
from keras_attention_cli.files import STDIN, check_output_file
from keras_attention_cli.line_batches import check_inputs, line_batches


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments; argument errors exit with one line, `error: ...`."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_model_arguments(parser, "translate", "a folder written by tools/train.py (model.keras)")
    parser.add_argument("files", nargs="*", help="UTF-8 input files; - is stdin (default)")
    parser.add_argument(
        "--output", default=None, help="write the translations to this file (default: stdout)"
    )
    parser.add_argument("--model-file", default=None, help="with a run folder (model.keras)")
    add_search_arguments(parser)
    parser.add_argument("--batch-size", type=int_at_least(1), default=64, help="sentences per call")
    parser.add_argument("--scores", action="store_true", help="print the score before each line")
    args = parser.parse_args(argv)
    resolve_model_argument(parser, args)
    run_only = {"--model-file": args.model_file, "--beam-size": args.beam_size,
                "--alpha": args.alpha}  # fmt: skip
    given = [name for name, value in run_only.items() if value is not None]
    if args.saved_model is not None and given:
        parser.error(f"{', '.join(given)}: only with --run-dir (a SavedModel has its own)")
    if args.preset_dir is not None and args.model_file is not None:
        parser.error(f"--model-file: only with a run folder; {args.preset_dir} is a preset folder")
    if args.run_dir is not None and args.model_file is None:
        args.model_file = "model.keras"
    check_stdout(args)
    return args


def check_stdout(args: argparse.Namespace) -> None:
    """Refuses, with one line, a standard output redirected into an input file or the
    model's file (`translate.py in.txt > in.txt`), which the shell has emptied already, and
    an --output that cannot be written or is one of the inputs."""
    from keras_attention.runs.output_guard import check_output_file as check_not_an_input
    from keras_attention.runs.output_guard import check_standard_output

    inputs = [name for name in args.files if name != STDIN]
    if args.run_dir is not None:
        inputs.append(os.path.join(args.run_dir, args.model_file))
    with user_errors():
        check_standard_output(inputs)
        if args.output is not None:
            check_output_file(args.output, "--output")
            check_not_an_input(args.output, "--output", [*inputs, args.run_dir, args.model])


READY_LINE = "ready: type a sentence per line, Ctrl-D to end"


def ready_line(names: list[str], stdin: TextIO) -> str | None:
    """The line that tells a person typing at a terminal that the model has loaded (which
    takes a while) and the tool reads their sentences: `READY_LINE` when `names` read stdin
    and `stdin` is a terminal; `None` for files, pipes and redirected input, whose output
    stays the translations alone.

    Args:
        names: the input files; `"-"` is stdin.
        stdin: the standard input.
    """
    if STDIN not in names:
        return None
    try:
        at_a_terminal = stdin.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return None
    return READY_LINE if at_a_terminal else None


def open_output(path: str | None) -> TextIO:
    """The stream the translations go to: `path` (UTF-8, replaced) or stdout."""
    if path is None:
        return sys.stdout
    with user_errors(OSError):
        return open(path, "w", encoding="utf-8")


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    names = args.files or [STDIN]
    with user_errors():
        check_inputs(names)
    # Imported once the arguments are checked, so that their errors come first.
    from keras_attention.core.progress import Progress
    from keras_attention.evaluation import translate_all
    from keras_attention.runs.translate_function import load_translate_function

    with user_errors():  # a missing or corrupt model, tokenizer or config.json
        translate = load_translate_function(
            args.run_dir, args.saved_model, args.model_file, args.beam_size, args.alpha,
            model=args.preset_dir,
        )  # fmt: skip
    output = open_output(args.output)
    ready = ready_line(names, sys.stdin)
    if ready is not None:
        print(ready, file=sys.stderr, flush=True)
    # At a terminal, the translations themselves show the progress.
    progress = Progress("translating", enabled=not output.isatty())
    try:
        with progress, user_errors(UserError):  # unreadable input, text that is not UTF-8
            for batch in line_batches(names, args.batch_size):
                translations, scores = translate_all(translate, batch, args.batch_size)
                output.writelines(
                    f"{value:.4f}\t{text}\n" if args.scores else text + "\n"
                    for text, value in zip(translations, scores, strict=True)
                )
                output.flush()
                progress.update(len(batch))
    finally:
        if output is not sys.stdout:
            output.close()


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-translate` and `tools/translate.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv), "it writes no file")
