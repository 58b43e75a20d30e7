"""Translate sentences, one per line, from files or stdin, with a trained model or a SavedModel.

echo "A man rides a bike." | python tools/translate.py --run-dir runs/translator
python tools/translate.py --saved-model runs/translator/export/1 sentences.txt

Prints one translation per input line, in order (an empty line translates to an empty line).
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a folder written by tools/train.py (model.keras)")
    source.add_argument("--saved-model", help="an exported version folder (export/1)")
    parser.add_argument("files", nargs="*", help="input files (default: stdin)")
    parser.add_argument("--model-file", default="model.keras", help="with --run-dir")
    parser.add_argument("--beam-size", type=int, default=4, help="with --run-dir; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="with --run-dir")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per call")
    parser.add_argument("--scores", action="store_true", help="print the score before each line")
    args = parser.parse_args(argv)
    # Imported once the arguments are read, so that --help and argument errors are instant.
    from keras_attention.evaluation import load_translate_function, translate_all

    try:
        lines = []
        for name in args.files or ["-"]:
            handle = sys.stdin if name == "-" else open(name, encoding="utf-8")  # noqa: SIM115
            with handle:
                lines += [line.rstrip("\r\n") for line in handle]
        translate = load_translate_function(
            args.run_dir, args.saved_model, args.model_file, args.beam_size, args.alpha
        )
        translations, scores = translate_all(translate, lines, args.batch_size)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    for text, value in zip(translations, scores, strict=True):
        print(f"{value:.4f}\t{text}" if args.scores else text)


if __name__ == "__main__":
    main()
