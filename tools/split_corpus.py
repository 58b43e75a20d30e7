"""Split a parallel corpus for the adaptation and back-translation experiments
(docs/adaptation.md, docs/back-translation.md): plain text in, plain text out, no TensorFlow.

    # in-domain pairs (a source line with one of the words) and the general rest
    python tools/split_corpus.py topic --source train.en --target train.de \\
        --words dog dogs puppy puppies --valid 250 --test 250 --output runs/split/dogs
    # half of the pairs kept parallel, the other half's target side kept as monolingual text
    python tools/split_corpus.py halves --source train.en --target train.de \\
        --output runs/split/halves

`topic` writes `general.SRC/TGT` (the pairs without the words) and `in_domain.{train,valid,
test}.SRC/TGT` (the pairs with them, shuffled with `--seed` and cut into the three parts);
`halves` writes `parallel.SRC/TGT` (a seeded half of the pairs) and `monolingual.TGT` (the
other half's targets) with `held_back.SRC` (their sources, for checks only). The file
suffixes are the languages, taken from the input files' suffixes; each output file is
written whole to a temporary name, then renamed. A word matches whole, in any case, after
punctuation is stripped from the source line's words. The split's sizes and seed are written
to `split.json` beside the files.
"""

import argparse
import json
import os
import random
import re
import sys
from pathlib import Path

CHECKOUT = str(Path(__file__).resolve().parents[1])
if CHECKOUT not in sys.path:
    sys.path.insert(0, CHECKOUT)  # the checkout's packages, not another installed copy

from keras_attention_cli.arguments import ArgumentParser, int_at_least  # noqa: E402
from keras_attention_cli.errors import fail, run_command  # noqa: E402

_WORD = re.compile(r"\w+", re.UNICODE)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("topic", "in-domain pairs (with one of --words) and the general rest"),
        ("halves", "half the pairs parallel, the other half's targets monolingual"),
    ):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("--source", required=True, help="the source-side file")
        command.add_argument("--target", required=True, help="the target-side file")
        command.add_argument("--output", required=True, help="the folder to write into")
        command.add_argument("--seed", type=int, default=0, help="the shuffle's seed (default 0)")
        if name == "topic":
            command.add_argument(
                "--words", nargs="+", required=True, help="source words that mark the topic"
            )
            for part, default in (("valid", 250), ("test", 250)):
                command.add_argument(
                    f"--{part}",
                    type=int_at_least(1),
                    default=default,
                    help=f"in-domain pairs held out for {part} (default {default})",
                )
    return parser.parse_args(argv)


def read_pairs(source: str, target: str) -> list[tuple[str, str]]:
    """The aligned lines of two files (plain or `.gz`), without their line ends or a
    byte-order mark (`read_lines`, the library's reader).

    Raises:
        ValueError: naming the files when their line counts differ or one is empty, a line
            that is not UTF-8 or a damaged `.gz`.
    """
    from keras_attention.data.text_files import read_lines

    sources, targets = read_lines(source), read_lines(target)
    if len(sources) != len(targets):
        raise ValueError(
            f"--source {source} has {len(sources)} lines but --target {target} has "
            f"{len(targets)}: the files must be aligned"
        )
    if not sources:
        raise ValueError(f"--source {source} is empty")
    return list(zip(sources, targets, strict=True))


def mentions(line: str, words: set[str]) -> bool:
    """Whether `line` has one of `words` (lowercase) as a whole word, in any case.

    Example:

    >>> mentions("Two dogs, running.", {"dog", "dogs"})
    True
    >>> mentions("A hotdog stand.", {"dog"})
    False
    """
    return any(word.lower() in words for word in _WORD.findall(line))


def split_topic(
    pairs: list[tuple[str, str]], words: list[str], valid: int, test: int, seed: int
) -> dict[str, list[tuple[str, str]]]:
    """`general` (pairs without the words) and the in-domain `train`, `valid` and `test`.

    Raises:
        ValueError: when the in-domain pairs are too few for `valid` + `test` + 1.
    """
    wanted = {word.lower() for word in words}
    topical = [pair for pair in pairs if mentions(pair[0], wanted)]
    general = [pair for pair in pairs if not mentions(pair[0], wanted)]
    if len(topical) <= valid + test:
        raise ValueError(
            f"--words {' '.join(words)} mark {len(topical)} pairs, too few for "
            f"--valid {valid} and --test {test} and a training part"
        )
    random.Random(seed).shuffle(topical)
    return {
        "general": general,
        "in_domain.valid": topical[:valid],
        "in_domain.test": topical[valid : valid + test],
        "in_domain.train": topical[valid + test :],
    }


def split_halves(pairs: list[tuple[str, str]], seed: int) -> tuple[list, list]:
    """A seeded half of the pairs (in their order) and the other half."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    first = sorted(order[: len(pairs) // 2])
    chosen = set(first)
    return [pairs[i] for i in first], [pairs[i] for i in range(len(pairs)) if i not in chosen]


def write_lines(path: Path, lines: list[str]) -> None:
    """`lines` into `path`, through a temporary name beside it."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(temporary, path)


def language(path: str, argument: str) -> str:
    suffix = Path(path).suffix.lstrip(".")
    if not suffix:
        raise ValueError(f"{argument} {path} has no language suffix (such as .en)")
    return suffix


def run(args: argparse.Namespace) -> dict:
    source_language = language(args.source, "--source")
    target_language = language(args.target, "--target")
    if source_language == target_language:
        raise ValueError(f"--source and --target have the same suffix .{source_language}")
    pairs = read_pairs(args.source, args.target)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    sizes = {}
    if args.command == "topic":
        parts = split_topic(pairs, args.words, args.valid, args.test, args.seed)
        for name, part in parts.items():
            write_lines(output / f"{name}.{source_language}", [s for s, _ in part])
            write_lines(output / f"{name}.{target_language}", [t for _, t in part])
            sizes[name] = len(part)
    else:
        parallel, rest = split_halves(pairs, args.seed)
        write_lines(output / f"parallel.{source_language}", [s for s, _ in parallel])
        write_lines(output / f"parallel.{target_language}", [t for _, t in parallel])
        write_lines(output / f"monolingual.{target_language}", [t for _, t in rest])
        write_lines(output / f"held_back.{source_language}", [s for s, _ in rest])
        sizes = {"parallel": len(parallel), "monolingual": len(rest)}
    record = {
        "command": args.command,
        "source": args.source,
        "target": args.target,
        "seed": args.seed,
        "sizes": sizes,
        **({"words": args.words} if args.command == "topic" else {}),
    }
    write_lines(output / "split.json", [json.dumps(record, indent=2)])
    return record


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def work() -> None:
        try:
            record = run(args)
        except (ValueError, OSError) as error:
            fail(str(error))
        for name, size in record["sizes"].items():
            print(f"{name}: {size:,} lines")

    return run_command(work)


if __name__ == "__main__":
    sys.exit(main())
