"""Minimal reproduction of Keras 3's `model.fit` failure under MultiWorkerMirroredStrategy
(keras-team/keras#20585, tensorflow/tensorflow#72388), and its fix.

    python tools/multi_worker_repro.py        # plain Keras: both workers fail in fit
    python tools/multi_worker_repro.py --fix  # with keras_attention's enable_multi_worker_fit

Starts two workers on 127.0.0.1 (free ports, TF_CONFIG, one intra-op thread each), which
train a two-layer Dense model with `fit` and then run `evaluate`. Prints what each worker
ended with; the exit status is 0 when both trained, 1 when they failed. On TF 2.21 with
Keras 3.15.1, without --fix, each worker fails with:

    ValueError: Attempt to convert a value (PerReplica:{...}) with an unsupported type
    (<class 'tensorflow.python.distribute.values.PerReplica'>) to a Tensor.

raised from `strategy.reduce("MEAN", first_batch)` in the trainer's `_maybe_symbolic_build`
(see keras_attention/distribute/multi_worker.py for both causes and the fix).
"""

import argparse
import json
import os
import sys


def worker(fix: bool) -> None:
    """One worker: the smallest program that shows the failure."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # before any other TF op
    import keras

    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
        )
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    if fix:
        from keras_attention.training import enable_multi_worker_fit

        enable_multi_worker_fit(model)
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).batch(16)
    history = model.fit(dataset, epochs=2, verbose=0)
    loss, mae = model.evaluate(dataset, verbose=0)
    print("RESULT " + json.dumps({"fit_loss": history.history["loss"], "evaluate": [loss, mae]}))


def last_error(output: str) -> str:
    """The last line that names an exception (and the output's last line, where the message
    of a multi-line exception ends), else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    errors = [line for line in lines if "Error:" in line and not line.startswith(("E0000", "W0"))]
    if not errors or errors[-1] == lines[-1]:
        return lines[-1][:300]
    return f"{errors[-1][:200]} ... {lines[-1][:200]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fix", action="store_true", help="apply enable_multi_worker_fit")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    if os.environ.get("TF_CONFIG"):
        worker(args.fix)
        return 0
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from keras_attention.distribute.local_cluster import run_local_cluster

    command = [sys.executable, os.path.abspath(__file__), *(["--fix"] if args.fix else [])]
    results = run_local_cluster(command, num_workers=2, timeout=args.timeout)
    for result in results:
        lines = [line for line in result.output.splitlines() if line.startswith("RESULT ")]
        ending = lines[-1] if lines and result.returncode == 0 else last_error(result.output)
        print(f"worker {result.index} (exit status {result.returncode}): {ending}")
    return 0 if all(result.returncode == 0 for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
