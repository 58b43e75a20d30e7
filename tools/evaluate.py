"""Translate a test set and score it with sacreBLEU (BLEU, chrF, lowercased BLEU; signatures).

python tools/evaluate.py --run-dir runs/translator                   # the generated test split
python tools/evaluate.py --run-dir runs/m30k --dataset multi30k --data-dir ../shared/data/multi30k
python tools/evaluate.py --saved-model runs/translator/export/1

With --run-dir, the dataset, its folder and its seed default to those of the run (config.json),
so that a run is scored on its own held-out split.
"""

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def run_settings(run_dir: str | None) -> dict:
    """The run's `dataset`, `data_dir` and `seed` from its config.json ({} without one)."""
    if run_dir is None or not (Path(run_dir) / "config.json").is_file():
        return {}
    config = json.loads((Path(run_dir) / "config.json").read_text())
    return {name: config[name] for name in ("dataset", "data_dir", "seed") if name in config}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a folder written by tools/train.py")
    source.add_argument("--saved-model", help="an exported version folder (export/1)")
    parser.add_argument("--model-file", default="model.keras", help="e.g. averaged.keras")
    parser.add_argument("--dataset", default=None, help="generated or multi30k; default: the run's")
    parser.add_argument("--data-dir", default=None, help="default: the run's")
    parser.add_argument("--seed", type=int, default=None, help="generated corpus; default: run's")
    parser.add_argument("--split", choices=["val", "test"], default="test")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--beam-size", type=int, default=4, help="with --run-dir; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="with --run-dir")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per call")
    parser.add_argument("--hypotheses", default=None, help="write the translations here")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1; got {args.limit}")
    # Imported once the arguments are read, so that --help and argument errors are instant.
    from keras_attention.data.datasets import load_corpus
    from keras_attention.evaluation import load_translate_function, score, translate_all

    settings = {"dataset": "generated", "data_dir": None, "seed": 0, **run_settings(args.run_dir)}
    for name in settings:
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    try:
        translate = load_translate_function(
            args.run_dir, args.saved_model, args.model_file, args.beam_size, args.alpha
        )
        corpus = load_corpus(settings["dataset"], settings["data_dir"], seed=settings["seed"])
        sources, references = corpus[args.split]
        sources, references = sources[: args.limit], references[: args.limit]
        seed = f" (seed {settings['seed']})" if settings["dataset"] == "generated" else ""
        print(f"{settings['dataset']} {args.split} split{seed}: {len(sources)} sentences")
        hypotheses, _ = translate_all(translate, sources, args.batch_size)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    if args.hypotheses:
        with open(args.hypotheses, "w", encoding="utf-8") as handle:
            handle.writelines(line + "\n" for line in hypotheses)
    scores = score(hypotheses, references)
    print(scores.summary())
    print(json.dumps({"bleu": scores.bleu, "chrf": scores.chrf, "bleu_lc": scores.bleu_lowercase}))


if __name__ == "__main__":
    main()
