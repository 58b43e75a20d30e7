"""Run by tests/distribute/test_multi_worker.py, as each worker of a local cluster or as one
process.

    python multi_worker_fit.py OUT_DIR fit      # a few SGD steps of the tiny Transformer
    python multi_worker_fit.py OUT_DIR resume   # epochs with ClusterBackupAndRestore

Writes `OUT_DIR/<name>.npz` (the weights after training) and `OUT_DIR/<name>.json` (what the
test checks), `<name>` being `worker<index>` under TF_CONFIG and `single` without. In
`resume` mode, worker 1 SIGKILLs itself in epoch `KILL_AT_EPOCH` when that is set.
"""

import json
import os
import signal
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

from keras_attention.distribute.cluster import (
    is_chief,
    multi_worker_strategy,
    read_tf_config,
)

OUT, MODE = Path(sys.argv[1]), sys.argv[2]
CLUSTER = read_tf_config()
# First thing: the strategy must exist before TensorFlow runs any op.
if CLUSTER is not None:
    strategy = multi_worker_strategy(
        connect_timeout=float(os.environ.get("CONNECT_TIMEOUT", "60")),
        heartbeat_timeout=float(os.environ.get("HEARTBEAT_TIMEOUT", "10")),
    )
else:
    strategy = tf.distribute.get_strategy()
NAME = "single" if CLUSTER is None else f"worker{CLUSTER.task_index}"

import keras  # noqa: E402
from tiny_transformer import tiny_transformer  # noqa: E402

from keras_attention.data.pipeline import EncodedPairs, make_batches  # noqa: E402
from keras_attention.distribute.strategy_fixes import enable_strategy_fixes  # noqa: E402
from keras_attention.models import Transformer  # noqa: E402
from keras_attention.training import (  # noqa: E402
    MaskedAccuracy,
    Perplexity,
    compile_with_paper_recipe,
)
from keras_attention.training.callbacks import ClusterBackupAndRestore  # noqa: E402

VOCAB = 40


def corpus(num_pairs: int) -> EncodedPairs:
    """Random pairs of 2 to 13 tokens (+ EOS; BOS + ... + EOS), the same in every process."""
    rng = np.random.default_rng(7)
    sources, targets = [], []
    for _ in range(num_pairs):
        sources.append([*rng.integers(4, VOCAB, rng.integers(2, 14)), 3])
        targets.append([2, *rng.integers(4, VOCAB, rng.integers(2, 14)), 3])
    return EncodedPairs(
        tf.ragged.constant(sources, tf.int32), tf.ragged.constant(targets, tf.int32), 0, 0, 0
    )


def batches(num_pairs: int, shuffle: bool) -> tf.data.Dataset:
    # Batch sizes are multiples of 2 in every run, so that the global batches are the same.
    return make_batches(
        corpus(num_pairs), max_tokens=96, max_length=16, batch_multiple=2, shuffle=shuffle, seed=1
    )


def tiny_model() -> Transformer:
    keras.utils.set_random_seed(0)
    with strategy.scope():
        # The Transformer is a plain keras.Model: the fit fix is applied as a run applies it.
        model = enable_strategy_fixes(tiny_transformer(VOCAB), strategy)
        compile_with_paper_recipe(model, warmup_steps=10, jit_compile=False)
        if MODE == "fit":
            # SGD: Adam's first steps turn rounding noise in near-zero gradients into
            # full-size steps, so they cannot compare two ways of computing a gradient.
            model.compile(
                optimizer=keras.optimizers.SGD(0.5),
                loss=model.loss,
                metrics=[MaskedAccuracy(), Perplexity()],
                jit_compile=False,
            )
    return model


def epoch_of_shares(dataset: tf.data.Dataset) -> tuple[list, list]:
    """Over one epoch as `fit` distributes it: the rows of this worker's share of each global
    batch, and the (unpadded) sources of its rows that are not padding."""
    rows, sources = [], []
    for share in strategy.experimental_distribute_dataset(dataset):
        local = strategy.experimental_local_results(share[0][0])[0].numpy()
        rows.append(int(local.shape[0]))
        sources += [[int(t) for t in row if t != 0] for row in local if row.any()]
    return rows, sources


class KillInEpoch(keras.callbacks.Callback):
    """SIGKILLs this process after the second batch of epoch `epoch`."""

    def __init__(self, epoch: int):
        super().__init__()
        self.epoch, self.current = epoch, -1

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == 1:
            os.kill(os.getpid(), signal.SIGKILL)


class EpochLog(keras.callbacks.Callback):
    """Appends each epoch this process begins to `OUT/<name>.epochs`."""

    def on_epoch_begin(self, epoch, logs=None):
        with open(OUT / f"{NAME}.epochs", "a") as log:
            log.write(f"{epoch}\n")


model = tiny_model()
initial = model.get_weights()
report: dict = {"replicas": strategy.num_replicas_in_sync, "is_chief": is_chief(strategy)}
if MODE == "fit":
    # Shuffled, over two epochs: a seeded run sees the same batches as one process.
    history = model.fit(batches(64, shuffle=True), epochs=2, verbose=0)
    report["evaluate"] = model.evaluate(batches(24, shuffle=False), return_dict=True, verbose=0)
    # A shuffled epoch: all workers must shuffle alike for their shares to cover it.
    report["rows"], report["sources"] = epoch_of_shares(batches(64, shuffle=True))
else:
    callbacks = [
        ClusterBackupAndRestore(OUT / "backup", is_chief=is_chief(strategy)),
        EpochLog(),
    ]
    kill_at = os.environ.get("KILL_AT_EPOCH")
    if kill_at is not None and CLUSTER is not None and CLUSTER.task_index == 1:
        callbacks.append(KillInEpoch(int(kill_at)))
    history = model.fit(batches(64, shuffle=True), epochs=4, verbose=0, callbacks=callbacks)
report["history"] = history.history
report["steps"] = int(model.optimizer.iterations.numpy())
report["max_change"] = max(
    float(np.max(np.abs(np.asarray(w) - w0)))
    for w, w0 in zip(model.get_weights(), initial, strict=True)
)
np.savez(OUT / f"{NAME}.npz", *[np.asarray(w) for w in model.get_weights()])
(OUT / f"{NAME}.json").write_text(json.dumps(report, default=float))
print("done", NAME, flush=True)
