"""Translate a test set and score it with sacreBLEU (BLEU, chrF, lowercased BLEU; signatures).

python tools/evaluate.py --run-dir runs/translator                   # the generated test split
python tools/evaluate.py --run-dir runs/m30k --dataset multi30k --data-dir ../shared/data/multi30k
python tools/evaluate.py --saved-model runs/translator/export/1
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_attention.data.datasets import DATASETS, load_corpus
from keras_attention.evaluation import score, translate_all
from keras_attention.export import Translator, load_exported
from keras_attention.translation_run import load_run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a folder written by tools/train.py")
    source.add_argument("--saved-model", help="an exported version folder (export/1)")
    parser.add_argument("--model-file", default="model.keras", help="e.g. averaged.keras")
    parser.add_argument("--dataset", choices=DATASETS, default="generated")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--split", choices=["val", "test"], default="test")
    parser.add_argument("--beam-size", type=int, default=4, help="with --run-dir; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="with --run-dir")
    parser.add_argument("--hypotheses", default=None, help="write the translations here")
    args = parser.parse_args(argv)
    if args.saved_model:
        translate = load_exported(args.saved_model)
    else:
        model, tokenizer = load_run(args.run_dir, args.model_file)
        translate = Translator(model, tokenizer, args.beam_size, args.alpha).translate
    sources, references = load_corpus(args.dataset, args.data_dir)[args.split]
    hypotheses, _ = translate_all(translate, sources)
    if args.hypotheses:
        with open(args.hypotheses, "w", encoding="utf-8") as handle:
            handle.writelines(line + "\n" for line in hypotheses)
    scores = score(hypotheses, references)
    print(scores.summary())
    print(json.dumps({"bleu": scores.bleu, "chrf": scores.chrf, "bleu_lc": scores.bleu_lowercase}))


if __name__ == "__main__":
    main()
