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

Decoding choices (see docs/translating.md):

    python tools/translate.py --run-dir RUN --n-best 4 in.txt     # INDEX<TAB>SCORE<TAB>TEXT
    python tools/translate.py --run-dir RUN --sample --top-p 0.9 --seed 1 in.txt
    python tools/translate.py --run-dir RUN --score --target out.txt in.txt  # SCORE<TAB>LOGP
    python tools/translate.py --run-dir A --run-dir B in.txt      # an ensemble of two runs
    python tools/translate.py --run-dir RUN --alignments in.txt   # TEXT<TAB>0-0 1-2 ...

`--n-best K` prints K lines per input line, best first: its index (from 0), its score and
the hypothesis, tab-separated; with `--sample`, K samples. `--sample` draws from the model
(`--temperature`, `--top-k`, `--top-p`; the same `--seed` gives the same samples). `--score
--target FILE` prints the model's score of each line of FILE as the translation of the same
line of the input (length-penalised as the beam search's, then the raw log-probability).
Several `--run-dir` decode as one ensemble (their tokenizers must be the same files).
`--alignments` adds each translation's word alignment (Pharaoh `i-j`, whitespace words).
"""

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

from keras_attention_cli.arguments import (
    ArgumentParser,
    add_model_arguments,
    add_search_arguments,
    fraction,
    int_at_least,
    non_negative_float,
    resolve_model_argument,
)
from keras_attention_cli.errors import UserError, run_command, user_errors
from keras_attention_cli.files import STDIN, check_output_file, read_input_lines
from keras_attention_cli.line_batches import check_inputs, line_batches


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments; argument errors exit with one line, `error: ...`."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_model_arguments(
        parser,
        "translate",
        "a folder written by tools/train.py (model.keras); repeat for an ensemble",
        several=True,
    )
    parser.add_argument("files", nargs="*", help="UTF-8 input files; - is stdin (default)")
    parser.add_argument(
        "--output", default=None, help="write the translations to this file (default: stdout)"
    )
    parser.add_argument("--model-file", default=None, help="with a run folder (model.keras)")
    add_search_arguments(parser)
    parser.add_argument("--batch-size", type=int_at_least(1), default=64, help="sentences per call")
    parser.add_argument("--scores", action="store_true", help="print the score before each line")
    choices = parser.add_argument_group("decoding choices")
    choices.add_argument(
        "--n-best", type=int_at_least(1), default=None, metavar="K",
        help="print K hypotheses per line (index, score, text; tab-separated), best first",
    )  # fmt: skip
    choices.add_argument(
        "--sample", action="store_true", help="sample translations instead of searching"
    )
    choices.add_argument(
        "--temperature", type=positive_float, default=1.0, help="with --sample (default 1.0)"
    )
    choices.add_argument(
        "--top-k", type=int_at_least(0), default=0,
        help="with --sample: draw among the K most likely tokens (default 0: all)",
    )  # fmt: skip
    choices.add_argument(
        "--top-p", type=probability, default=1.0,
        help="with --sample: draw within the nucleus of this probability (default 1.0: all)",
    )  # fmt: skip
    choices.add_argument("--seed", type=int, default=0, help="with --sample (default 0)")
    choices.add_argument(
        "--score", action="store_true",
        help="score the lines of --target as translations of the input lines",
    )  # fmt: skip
    choices.add_argument("--target", default=None, help="with --score: the translations file")
    choices.add_argument(
        "--alignments", action="store_true",
        help="add each translation's word alignment (Pharaoh i-j) after a tab",
    )  # fmt: skip
    args = parser.parse_args(argv)
    check_choices(parser, args)
    runs = args.run_dir or []
    args.ensemble = runs if len(runs) > 1 else None
    args.run_dir = runs[0] if len(runs) == 1 else None
    resolve_model_argument(parser, args)
    run_only = {"--model-file": args.model_file, "--beam-size": args.beam_size,
                "--alpha": args.alpha}  # fmt: skip
    given = [name for name, value in run_only.items() if value is not None]
    if args.saved_model is not None and given:
        parser.error(f"{', '.join(given)}: only with --run-dir (a SavedModel has its own)")
    if args.preset_dir is not None and args.model_file is not None:
        parser.error(f"--model-file: only with a run folder; {args.preset_dir} is a preset folder")
    if args.saved_model is not None and args.alignments:
        parser.error(f"--alignments: needs the model's attention; {args.saved_model} is a "
                     "SavedModel: give its run or preset folder")  # fmt: skip
    if args.saved_model is not None and args.sample and args.n_best is not None:
        parser.error("--sample with --n-best: a SavedModel samples one translation a "
                     "sentence; give its run or preset folder")  # fmt: skip
    if args.ensemble is not None and args.model_file is not None:
        parser.error("--model-file: only with one --run-dir (an ensemble reads each run's)")
    if args.run_dir is not None and args.model_file is None:
        args.model_file = "model.keras"
    check_stdout(args)
    return args


def positive_float(text: str) -> float:
    """An argparse `type` for finite numbers above 0 (a temperature)."""
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be above 0; got {text}")
    return value


def probability(text: str) -> float:
    """An argparse `type` for numbers in (0, 1] (a nucleus)."""
    value = fraction(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]; got {text}")
    return value


def check_choices(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses, naming them, decoding options that do not go together."""
    sampling = {"--temperature": args.temperature != 1.0, "--top-k": args.top_k != 0,
                "--top-p": args.top_p != 1.0, "--seed": args.seed != 0}  # fmt: skip
    given = [name for name, set_ in sampling.items() if set_]
    if given and not args.sample:
        parser.error(f"{', '.join(given)}: only with --sample")
    if args.score != (args.target is not None):
        parser.error("--score and --target FILE go together")
    if args.score and (args.sample or args.n_best or args.alignments):
        parser.error("--score: not with --sample, --n-best or --alignments")
    if args.n_best is not None and (args.scores or args.alignments):
        parser.error("--n-best prints its scores; not with --scores or --alignments")


def check_stdout(args: argparse.Namespace) -> None:
    """Refuses, with one line, a standard output redirected into an input file or the
    model's file (`translate.py in.txt > in.txt`), which the shell has emptied already, and
    an --output that cannot be written or is one of the inputs."""
    from keras_attention.runs.output_guard import check_output_file as check_not_an_input
    from keras_attention.runs.output_guard import check_standard_output

    inputs = [name for name in args.files if name != STDIN]
    if args.run_dir is not None:
        inputs.append(os.path.join(args.run_dir, args.model_file))
    if args.target is not None:
        inputs.append(args.target)
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


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[TextIO]:
    """The stream the translations go to: stdout, or a file beside `path` (UTF-8) renamed
    onto it once every line is written. A run stopped half-way (an error, Ctrl-C, SIGTERM)
    leaves `path` as it was: the output is whole or absent, never a prefix."""
    if path is None:
        yield sys.stdout
        return
    from keras_attention.core.atomic_files import atomic_path

    with (
        user_errors(OSError),
        atomic_path(path, suffix=".part") as temporary,
        open(temporary, "w", encoding="utf-8") as output,
    ):
        yield output


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    names = args.files or [STDIN]
    with user_errors():
        check_inputs(names)
        if args.target is not None:
            check_inputs([args.target])
    # Imported once the arguments are checked, so that their errors come first.
    from keras_attention.core.progress import Progress

    plain = not (args.n_best or args.sample or args.score or args.alignments or args.ensemble)
    with user_errors():  # a missing or corrupt model, tokenizer or config.json
        decode = load_plain(args) if plain else load_decoder(args)
        targets = read_input_lines([args.target]) if args.score else None
    with open_output(args.output) as output:
        ready = ready_line(names, sys.stdin)
        if ready is not None:
            print(ready, file=sys.stderr, flush=True)
        # At a terminal, the translations themselves show the progress.
        progress = Progress("translating", enabled=not output.isatty())
        done = 0
        with progress, user_errors(UserError):  # unreadable input, text that is not UTF-8
            for batch in line_batches(names, args.batch_size):
                output.writelines(decode(batch, done, targets))
                output.flush()
                done += len(batch)
                progress.update(len(batch))
            if targets is not None and done != len(targets):
                raise UserError(
                    f"--target {args.target} has {len(targets)} lines but the input has "
                    f"{done}: they must be aligned"
                )


def load_plain(args: argparse.Namespace):
    """The default decoding: a batch's translations, in order, one line each."""
    from keras_attention.evaluation import translate_all
    from keras_attention.runs.translate_function import load_translate_function

    translate = load_translate_function(
        args.run_dir, args.saved_model, args.model_file, args.beam_size, args.alpha,
        model=args.preset_dir,
    )  # fmt: skip

    def decode(batch: list[str], first: int, targets) -> list[str]:
        translations, scores = translate_all(translate, batch, args.batch_size)
        return [
            f"{value:.4f}\t{text}\n" if args.scores else text + "\n"
            for text, value in zip(translations, scores, strict=True)
        ]

    return decode


def widened(folder: str, beam_size: int | None, alpha: float | None) -> tuple[int, float]:
    """The beam size and alpha to decode a run or preset folder with: the given ones, else
    the folder's; a negative `beam_size` -K means the folder's widened to at least K."""
    from keras_attention.models.preset_sources import beam_search_settings

    own_beam, own_alpha = beam_search_settings(folder)
    if beam_size is None:
        beam_size = own_beam
    elif beam_size < 0:
        beam_size = max(own_beam, -beam_size)
    return beam_size, own_alpha if alpha is None else alpha


def load_decoder(args: argparse.Namespace):
    """The decoding choices: a batch's output lines, as the options ask (see the module)."""
    import numpy as np

    from keras_attention.runs.decoders import SavedModelDecoder, load_ensemble
    from keras_attention.runs.files import load_run_model
    from keras_attention.serving.translator import Translator

    beam_size = args.beam_size
    if args.n_best is not None and not args.sample and beam_size is None:
        beam_size = -args.n_best  # at least K: the folder's beam, widened to K if narrower
    if args.ensemble is not None:
        decoder = load_ensemble(args.ensemble, *widened(args.ensemble[0], beam_size, args.alpha))
    elif args.saved_model is not None:
        decoder = SavedModelDecoder(args.saved_model)
    elif args.preset_dir is not None:
        decoder = Translator.from_preset(
            args.preset_dir, *widened(args.preset_dir, beam_size, args.alpha)
        )
    else:
        model, tokenizer = load_run_model(args.run_dir, args.model_file)
        decoder = Translator(model, tokenizer, *widened(args.run_dir, beam_size, args.alpha))
    if args.n_best is not None and not args.sample:
        width = decoder.n_best_width() if args.saved_model else decoder.beam_size
        if args.n_best > width:
            raise ValueError(
                f"--n-best {args.n_best}: at most the beam size ({width}); "
                + (f"{args.saved_model} was exported with it" if args.saved_model else
                   "leave --beam-size out, or give one at least as large")
            )  # fmt: skip

    def texts(values) -> list[str]:
        return [value.decode("utf-8") for value in np.asarray(values).reshape(-1)]

    def decode(batch: list[str], first: int, targets) -> list[str]:
        if targets is not None:
            given = targets[first : first + len(batch)]
            if len(given) != len(batch):
                raise UserError(
                    f"--target {args.target} has {len(targets)} lines but the input has "
                    "more: they must be aligned"
                )
            result = decoder.score(batch, given)
            pairs = zip(result["scores"].numpy(), result["log_probs"].numpy(), strict=True)
            return [f"{score:.4f}\t{log_prob:.4f}\n" for score, log_prob in pairs]
        if args.sample:
            result = decoder.sample(
                batch, num_samples=args.n_best, seed=args.seed, temperature=args.temperature,
                top_k=args.top_k, top_p=args.top_p, first_index=first,
            )  # fmt: skip
        elif args.n_best is not None:
            result = decoder.n_best(batch, args.n_best)
        else:
            result = decoder.translate(batch)
        translations, scores = result["translations"].numpy(), result["scores"].numpy()
        if args.n_best is not None:
            return [
                f"{first + row}\t{scores[row, k]:.4f}\t{texts(translations[row, k : k + 1])[0]}\n"
                for row in range(len(batch))
                for k in range(translations.shape[1])
            ]
        lines = texts(translations)
        ends = ["\n"] * len(lines)
        if args.alignments:
            ends = [f"\t{alignment}\n" for alignment in decoder.align(batch, lines)]
        starts = [f"{value:.4f}\t" for value in scores] if args.scores else [""] * len(lines)
        return [start + text + end for start, text, end in zip(starts, lines, ends, strict=True)]

    return decode


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-translate` and `tools/translate.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv), "it writes no file")
