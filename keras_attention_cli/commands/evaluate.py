"""Translate a test set and score it with sacreBLEU (BLEU, chrF, lowercased BLEU; signatures).

python tools/evaluate.py --run-dir runs/translator                   # the generated test split
python tools/evaluate.py --run-dir runs/translator --checkpoint epoch_012.weights.h5  # mid-run
python tools/evaluate.py --run-dir runs/m30k --dataset multi30k --data-dir data/multi30k
python tools/evaluate.py --model runs/translator/export/1
python tools/evaluate.py --model presets/en-de     # a run, preset or exported version folder
python tools/evaluate.py --run-dir runs/translator --source my.en --reference my.de  # your files

With --source and --reference, your own files are translated and scored (line i of the
reference translates line i of the source; both UTF-8, read and checked before the model
loads), as sacreBLEU's command line scores given files; the Moses tokenizer of the
lowercased, tokenized BLEU takes the reference's language from its suffix (`my.de`), else
from --target-lang, else the run's target language, else German.

--model takes a run folder, a preset folder (tools/export.py --preset-dir) or an exported
version folder, told apart by their files. With a run, the dataset, its folder and its seed
default to those of the run (config.json), so that a run is scored on its own held-out split,
and so do the beam width and the length penalty (4 and 0.6 for runs whose config.json
predates them; a preset folder's come from its metadata.json). A run still training has no
model.keras yet: without --model-file or --checkpoint the last epoch checkpoint is scored
instead. The first line printed names the model scored. --output (the translations) is
checked before any work; errors are one line, `error: ...`, naming the argument or file, with
exit status 2. At a terminal, the translation's progress is shown on stderr.

The lines printed are for people; --json adds a last line for programs, the scores as one
JSON object (`{"bleu": ..., "chrf": ..., "bleu_lc": ...}`, unrounded).
"""

import argparse
import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from keras_attention_cli.arguments import (
    ArgumentParser,
    add_model_arguments,
    add_search_arguments,
    int_at_least,
    resolve_model_argument,
)
from keras_attention_cli.errors import fail, run_command, user_errors
from keras_attention_cli.files import check_output_file, read_input_lines
from keras_attention_cli.old_spellings import add_old_spellings

if TYPE_CHECKING:
    from keras_attention.evaluation import Scores

# What --run-dir alone decides; a SavedModel has its own model and beam search.
RUN_ONLY = ("model_file", "checkpoint", "beam_size", "alpha")


def run_settings(run_dir: str | None) -> dict:
    """The run's `dataset`, `data_dir`, `seed` and `train` files from its config.json ({}
    without one).

    Raises:
        ValueError: naming config.json if it is corrupt.
    """
    from keras_attention.runs.files import read_run_config

    if run_dir is None or not (Path(run_dir) / "config.json").is_file():
        return {}
    config = read_run_config(run_dir)
    names = ("dataset", "data_dir", "seed", "train")
    return {name: config[name] for name in names if name in config}


def load_scored_model(args: argparse.Namespace):
    """The translate function of an exported version folder, of a preset folder or of the
    run's model, and that model's path.

    The run's model file is located once and then loaded by its path, so that the path
    printed is the one scored even if the run writes a new checkpoint meanwhile. Beam width
    and length penalty default to the run's (`run_files.run_beam_search`).

    Raises:
        FileNotFoundError: naming a missing file.
        ValueError: naming a corrupt file or a checkpoint of another architecture.
    """
    from keras_attention.runs.files import is_weights_file, locate_run_model
    from keras_attention.runs.translate_function import load_translate_function

    if args.saved_model is not None:
        return load_translate_function(saved_model=args.saved_model), args.saved_model
    preset_dir = getattr(args, "preset_dir", None)  # set from --model by parse_args
    if preset_dir is not None:
        translate = load_translate_function(
            model=preset_dir, beam_size=args.beam_size, alpha=args.alpha
        )
        return translate, preset_dir
    path = locate_run_model(args.run_dir, args.model_file, args.checkpoint)
    pinned = {"checkpoint" if is_weights_file(path) else "model_file": path.absolute()}
    translate = load_translate_function(
        args.run_dir, beam_size=args.beam_size, alpha=args.alpha, **pinned
    )
    return translate, path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments (with `args.given_files`, the lines of --source and --reference,
    or `None`); argument errors, unreadable or unequal --source/--reference files and an
    unwritable --output path exit with one line, `error: ...`, before any work."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_model_arguments(parser, "evaluate", "a folder written by tools/train.py")
    model = parser.add_mutually_exclusive_group()
    model.add_argument(
        "--model-file", default=None, help="with --run-dir: e.g. averaged.keras (default: "
        "model.keras, or the last checkpoint while the run trains)",
    )  # fmt: skip
    model.add_argument(
        "--checkpoint", default=None, help="with --run-dir: an epoch checkpoint to score "
        "(epoch_012.weights.h5, a path, best or last), in the model rebuilt from config.json",
    )  # fmt: skip
    parser.add_argument("--dataset", default=None, help="generated or multi30k; default: the run's")
    parser.add_argument("--data-dir", default=None, help="default: the run's")
    parser.add_argument("--seed", type=int, default=None, help="generated corpus; default: run's")
    parser.add_argument(
        "--split", choices=["val", "test"], default="test", help="which split (default: test)"
    )
    parser.add_argument(
        "--source", default=None, help="score your own files: the source sentences, one a line"
    )
    parser.add_argument(
        "--reference", default=None, help="with --source: the reference translation of each line"
    )
    parser.add_argument(
        "--target-lang", default=None, help="with --reference: its language, for the Moses "
        "tokenizer (default: its suffix, else the run's target language, else de)",
    )  # fmt: skip
    parser.add_argument("--limit", type=int_at_least(1), default=None, help="the first N only")
    add_search_arguments(parser)
    parser.add_argument("--batch-size", type=int_at_least(1), default=64, help="sentences per call")
    parser.add_argument("--output", default=None, help="write the translations to this file")
    parser.add_argument(
        "--json", action="store_true", help="for programs: end with the scores as one JSON "
        'line, {"bleu": ..., "chrf": ..., "bleu_lc": ...} (full precision)',
    )  # fmt: skip
    add_old_spellings(parser, "evaluate", {"--output": "output"})
    args = parser.parse_args(argv)
    resolve_model_argument(parser, args)
    given = ["--" + name.replace("_", "-") for name in RUN_ONLY if getattr(args, name) is not None]
    if args.saved_model is not None and given:
        parser.error(f"{', '.join(given)}: only with --run-dir (a SavedModel has its own)")
    given = [name for name in given if name in ("--model-file", "--checkpoint")]
    if args.preset_dir is not None and given:
        parser.error(f"{', '.join(given)}: only with a run folder; {args.preset_dir} is a preset")
    args.given_files = given_files(parser, args)
    if args.output is not None:
        from keras_attention.runs import output_guard

        with user_errors():
            check_output_file(args.output, "--output")
            output_guard.check_output_file(args.output, "--output", read_files(args))
    return args


def given_files(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[list[str], list[str]] | None:
    """The lines of --source and --reference (`None` without them), read and checked: both
    given, neither empty, as many lines in each; else one line, `error: ...`."""
    if args.source is None and args.reference is None:
        if args.target_lang is not None:
            parser.error("--target-lang: only with --source and --reference")
        return None
    if args.source is None or args.reference is None:
        parser.error("--source and --reference go together: give both files")
    named = {"--dataset": args.dataset, "--data-dir": args.data_dir, "--seed": args.seed}
    given = [name for name, value in named.items() if value is not None]
    if given:
        parser.error(f"{', '.join(given)}: not with --source and --reference (your own files)")
    with user_errors():
        sources = read_input_lines([args.source])
        references = read_input_lines([args.reference])
    for option, path, lines in (("--source", args.source, sources),
                                ("--reference", args.reference, references)):  # fmt: skip
        if not lines:
            fail(f"{option} {path} is empty")
    if len(sources) != len(references):
        fail(
            f"--source {args.source} has {len(sources)} lines but --reference "
            f"{args.reference} has {len(references)}: line i of one must translate line i "
            "of the other"
        )
    return sources, references


def given_files_language(args: argparse.Namespace) -> str | None:
    """The reference's language: --target-lang, else its suffix, else the run's."""
    from keras_attention.data.corpus_files import language_of
    from keras_attention.runs.files import read_run_config

    if args.target_lang is not None:
        return args.target_lang
    if language_of(args.reference) is not None:
        return language_of(args.reference)
    if args.run_dir is not None and (Path(args.run_dir) / "config.json").is_file():
        return read_run_config(args.run_dir).get("target_lang")
    return None


def read_files(args: argparse.Namespace) -> list:
    """The files and folders the evaluation reads, that --output must not replace: the
    model's (and the run's folder), the corpus folder, the run's own split files and the
    given --source and --reference."""
    from keras_attention.runs.files import locate_run_model, read_run_config
    from keras_attention.runs.output_guard import corpus_inputs

    inputs = [args.run_dir, args.saved_model, args.preset_dir, args.data_dir, args.source,
              args.reference]  # fmt: skip
    if args.run_dir is not None:
        with contextlib.suppress(OSError, ValueError):  # reported when the model loads
            inputs.append(locate_run_model(args.run_dir, args.model_file, args.checkpoint))
        try:
            config = read_run_config(args.run_dir)
        except (OSError, ValueError):  # reported when the corpus loads
            config = {}
        splits = [config.get("valid") or [], config.get("test") or []]
        inputs += [*corpus_inputs(p for pair in splits for p in pair), config.get("data_dir")]
    return inputs


def corpus_settings(args: argparse.Namespace) -> dict:
    """`dataset`, `data_dir` and `seed`: the arguments', else the run's, else the defaults."""
    settings = {"dataset": "generated", "data_dir": None, "seed": 0}
    settings.update(run_settings(args.run_dir))
    if settings["dataset"] is None and settings.get("train") is None:
        settings["dataset"] = "generated"
    for name in ("dataset", "data_dir", "seed"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    return settings


def own_splits(args: argparse.Namespace) -> bool:
    """Whether the run's own splits are scored: a run folder, no corpus option given. They
    are the copies in its `data/` folder (or, for an older run, the files its config.json
    names by absolute paths), the same wherever the command runs."""
    overrides = (args.dataset, args.data_dir, args.seed)
    has_config = args.run_dir is not None and (Path(args.run_dir) / "config.json").is_file()
    return has_config and overrides == (None, None, None)


def write_hypotheses(path: str, hypotheses: list[str]) -> None:
    """Writes one translation per line (UTF-8) to `path`, atomically."""
    from keras_attention.core.atomic_files import write_text_atomically

    write_text_atomically(path, "".join(line + "\n" for line in hypotheses))


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    # Imported once the arguments are checked, so that their errors come first.
    from keras_attention.core.progress import Progress, counted
    from keras_attention.data.datasets import load_corpus
    from keras_attention.evaluation import moses_language, score, translate_all
    from keras_attention.runs.corpus import run_evaluation_splits

    language = None
    with user_errors():  # a missing or corrupt config.json, model, checkpoint or corpus file
        settings = corpus_settings(args)
        translate, model_path = load_scored_model(args)
        print(f"model: {model_path}")
        if args.given_files is not None:
            corpus = {args.split: args.given_files}
            language = given_files_language(args)
            described = f"{args.source} against {args.reference}"
        elif own_splits(args):
            corpus, language = run_evaluation_splits(args.run_dir)
            described = f"the run's own {args.split} split"
        else:
            corpus = load_corpus(
                settings["dataset"], settings["data_dir"], settings["seed"], train_pairs=0
            )
        if settings.get("train") is None and args.given_files is None:
            seed = f" (seed {settings['seed']})" if settings["dataset"] == "generated" else ""
            described = f"{settings['dataset']} {args.split} split{seed}"
    sources, references = corpus[args.split]
    sources, references = sources[: args.limit], references[: args.limit]
    print(f"{described}: {len(sources)} sentences")
    with Progress("translating", total=len(sources)) as progress:
        hypotheses, _ = translate_all(counted(translate, progress), sources, args.batch_size)
    if args.output:
        with user_errors(OSError):  # e.g. a disk that filled up meanwhile
            write_hypotheses(args.output, hypotheses)
    scores = score(hypotheses, references, moses_language(language or "de"))
    print(scores.summary())
    if args.json:
        print(json_line(scores))


def json_line(scores: "Scores") -> str:
    """The scores as `--json` prints them: one JSON object, unrounded."""
    return json.dumps({"bleu": scores.bleu, "chrf": scores.chrf, "bleu_lc": scores.bleu_lowercase})


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-evaluate` and `tools/evaluate.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv))
