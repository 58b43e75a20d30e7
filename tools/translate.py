"""Translate sentences, one per line, from files or stdin, with a trained model or a SavedModel.

echo "A man rides a bike." | python tools/translate.py --run-dir runs/translator
python tools/translate.py --saved-model runs/translator/export/1 sentences.txt
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_attention.evaluation import translate_all
from keras_attention.export import Translator, load_exported
from keras_attention.translation_run import load_run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a folder written by tools/train.py (model.keras)")
    source.add_argument("--saved-model", help="an exported version folder (export/1)")
    parser.add_argument("files", nargs="*", help="input files (default: stdin)")
    parser.add_argument("--model-file", default="model.keras", help="with --run-dir")
    parser.add_argument("--beam-size", type=int, default=4, help="with --run-dir; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="with --run-dir")
    parser.add_argument("--scores", action="store_true", help="print the score before each line")
    args = parser.parse_args(argv)
    if args.saved_model:
        translate = load_exported(args.saved_model)
    else:
        model, tokenizer = load_run(args.run_dir, args.model_file)
        translate = Translator(model, tokenizer, args.beam_size, args.alpha).translate
    lines = []
    for name in args.files or ["-"]:
        handle = sys.stdin if name == "-" else open(name, encoding="utf-8")  # noqa: SIM115
        with handle:
            lines += [line.rstrip("\n") for line in handle]
    translations, scores = translate_all(translate, lines)
    for text, value in zip(translations, scores, strict=True):
        print(f"{value:.4f}\t{text}" if args.scores else text)


if __name__ == "__main__":
    main()
