"""Export a trained translator as a SavedModel for TensorFlow Serving.

    python tools/export.py runs/translator --export-dir runs/translator/export

Writes EXPORT_DIR/<version>/ (next free version unless --version), atomically.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", help="a folder written by tools/train.py")
    parser.add_argument("--model-file", default="model.keras", help="e.g. averaged.keras")
    parser.add_argument("--export-dir", default=None, help="default: RUN_DIR/export")
    parser.add_argument("--version", type=int, default=None)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--max-source-length", type=int, default=128)
    args = parser.parse_args(argv)
    export_dir = args.export_dir or os.path.join(args.run_dir, "export")
    target = os.path.join(export_dir, str(args.version))
    if args.version is not None and os.path.exists(target) and not args.overwrite:
        parser.error(f"{target} exists; pass --overwrite or another --version")
    # Imported once the arguments are read, so that --help and argument errors are instant.
    from keras_attention.export import Translator, export_translator
    from keras_attention.translation_run import load_run

    try:
        model, tokenizer = load_run(args.run_dir, args.model_file)
        translator = Translator(
            model, tokenizer, args.beam_size, args.alpha, max_source_length=args.max_source_length
        )
        path = export_translator(translator, export_dir, args.version, overwrite=args.overwrite)
    except (OSError, ValueError) as error:  # a missing file, an existing version, a bad value
        parser.error(str(error))
    print(f"exported {path}")


if __name__ == "__main__":
    main()
