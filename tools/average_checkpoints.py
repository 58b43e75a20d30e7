"""Average the weights of a run's last N epoch checkpoints into one model (paper, Section 6.1).

python tools/average_checkpoints.py runs/translator --last 5
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", help="a folder written by tools/train.py")
    parser.add_argument("--last", type=int, default=5, help="how many checkpoints to average")
    parser.add_argument("--output", default=None, help="default: RUN_DIR/averaged.keras")
    args = parser.parse_args(argv)
    # Imported once the arguments are read, so that --help and argument errors are instant.
    from keras_attention.training.checkpoints import average_checkpoints, last_checkpoints
    from keras_attention.translation_run import load_run

    try:
        model, _ = load_run(args.run_dir)
        paths = last_checkpoints(os.path.join(args.run_dir, "checkpoints"), args.last)
        average_checkpoints(model, paths)
    except (OSError, ValueError) as error:  # a missing file, too few or foreign checkpoints
        parser.error(str(error))
    output = args.output or os.path.join(args.run_dir, "averaged.keras")
    model.save(output)
    print(f"averaged {len(paths)} checkpoints ({paths[0].name} .. {paths[-1].name}) -> {output}")


if __name__ == "__main__":
    main()
