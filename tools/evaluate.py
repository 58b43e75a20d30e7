"""Translate a test set and score it with sacreBLEU (BLEU, chrF, lowercased BLEU; signatures).

python tools/evaluate.py --run-dir runs/translator                   # the generated test split
python tools/evaluate.py --run-dir runs/translator --checkpoint epoch_012.weights.h5  # mid-run
python tools/evaluate.py --run-dir runs/m30k --dataset multi30k --data-dir ../shared/data/multi30k
python tools/evaluate.py --saved-model runs/translator/export/1

With --run-dir, the dataset, its folder and its seed default to those of the run (config.json),
so that a run is scored on its own held-out split. A run still training has no model.keras yet:
without --model-file or --checkpoint the last epoch checkpoint is scored instead. The first line
printed names the model scored.
"""

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def run_settings(run_dir: str | None) -> dict:
    """The run's `dataset`, `data_dir` and `seed` from its config.json ({} without one).

    Raises:
        ValueError: naming config.json if it is not a JSON object.
    """
    from keras_attention.run_files import read_run_config

    if run_dir is None or not (Path(run_dir) / "config.json").is_file():
        return {}
    config = read_run_config(run_dir)
    return {name: config[name] for name in ("dataset", "data_dir", "seed") if name in config}


def load_scored_model(args: argparse.Namespace):
    """The translate function of `--saved-model` or of the run's model, and that model's path.

    The run's model file is located once and then loaded by its path, so that the path
    printed is the one scored even if the run writes a new checkpoint meanwhile.
    """
    from keras_attention.evaluation import load_translate_function
    from keras_attention.run_files import is_weights_file, locate_run_model

    if args.saved_model is not None:
        return load_translate_function(saved_model=args.saved_model), args.saved_model
    path = locate_run_model(args.run_dir, args.model_file, args.checkpoint)
    pinned = {"checkpoint" if is_weights_file(path) else "model_file": path.absolute()}
    translate = load_translate_function(
        args.run_dir, beam_size=args.beam_size, alpha=args.alpha, **pinned
    )
    return translate, path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a folder written by tools/train.py")
    source.add_argument("--saved-model", help="an exported version folder (export/1)")
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
    parser.add_argument("--split", choices=["val", "test"], default="test")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--beam-size", type=int, default=4, help="with --run-dir; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="with --run-dir")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per call")
    parser.add_argument("--hypotheses", default=None, help="write the translations here")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1; got {args.limit}")
    if args.saved_model is not None and (args.model_file or args.checkpoint):
        parser.error("--model-file and --checkpoint go with --run-dir, not --saved-model")
    # Imported once the arguments are read, so that --help and argument errors are instant.
    from keras_attention.data.datasets import load_corpus
    from keras_attention.evaluation import score, translate_all

    try:
        settings = {"dataset": "generated", "data_dir": None, "seed": 0}
        settings.update(run_settings(args.run_dir))
        for name in settings:
            if getattr(args, name) is not None:
                settings[name] = getattr(args, name)
        translate, model_path = load_scored_model(args)
        print(f"model: {model_path}")
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
