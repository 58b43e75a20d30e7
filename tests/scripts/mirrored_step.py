"""Run in a subprocess by tests/distribute/test_strategy.py: two logical CPUs must exist before TF
starts.

Prints one JSON line: the largest weight difference between one training step under
MirroredStrategy (2 replicas) and one step on one device, over the same global batch, the
number of steps `model.fit` ran under the strategy, and the replicas' dropout masks: Keras's,
after `enable_replica_dropout`, and `ReplicaDropout`'s (the layer old files name).
"""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
from tiny_transformer import tiny_transformer  # noqa: E402

from keras_attention.distribute import get_strategy  # noqa: E402
from keras_attention.distribute.replica_dropout import (  # noqa: E402
    ReplicaDropout,
    ReplicaSeedGenerator,
    enable_replica_dropout,
)
from keras_attention.distribute.strategy_fixes import enable_strategy_fixes  # noqa: E402
from keras_attention.models import Transformer  # noqa: E402
from keras_attention.training import compile_with_paper_recipe  # noqa: E402

VOCAB, BATCH = 30, 4


def make_model(initial_weights=None) -> Transformer:
    """A tiny model compiled with the paper's loss and metrics, and plain SGD.

    SGD, because Adam's first step is lr * g / (|g| + 1e-9): it turns rounding noise in the
    near-zero gradients into full-size steps of either sign, so it cannot compare gradients.
    """
    model = tiny_transformer(VOCAB)
    if initial_weights is not None:
        model.set_weights(initial_weights)
    compile_with_paper_recipe(model, warmup_steps=10, jit_compile=False)
    model.compile(
        optimizer=keras.optimizers.SGD(1.0), loss=model.loss, metrics=None, jit_compile=False
    )
    return model


def batch() -> tuple:
    rng = np.random.default_rng(0)
    source = rng.integers(4, VOCAB, (BATCH, 6)).astype("int32")
    target = rng.integers(4, VOCAB, (BATCH, 5)).astype("int32")
    # The two replicas' halves hold different numbers of real tokens.
    source[2:, 3:] = 0
    target[2:, 2:] = 0
    target_in = np.concatenate([np.full((BATCH, 1), 2, "int32"), target[:, :-1]], axis=1)
    return (source, np.where(target == 0, 0, target_in)), target


def one_step(model: Transformer) -> list:
    dataset = tf.data.Dataset.from_tensors(batch())
    model.fit(dataset, epochs=1, verbose=0)
    return [np.asarray(w) for w in model.get_weights()]


def largest_difference(first: list, second: list) -> float:
    return max(float(np.max(np.abs(a - b))) for a, b in zip(first, second, strict=True))


keras.utils.set_random_seed(0)
single = make_model()
initial = single.get_weights()
single_weights = one_step(single)

strategy = get_strategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    mirrored = make_model(initial)
mirrored_weights = one_step(mirrored)
difference = largest_difference(single_weights, mirrored_weights)
moved = largest_difference(initial, single_weights)


def replica_masks(layer: keras.layers.Layer) -> list:
    """Each replica's dropout mask (1 kept, 0 dropped) over a batch of ones of equal shape."""

    @tf.function
    def masks():
        return strategy.run(lambda: layer(tf.ones((64, 32)), training=True))

    return [(np.asarray(m) != 0).astype(int) for m in strategy.experimental_local_results(masks())]


with strategy.scope():
    keras_dropout = keras.layers.Dropout(0.5, seed=3)
    ours = enable_replica_dropout(keras.layers.Dropout(0.5, seed=3))
    old_layer = ReplicaDropout(0.5, seed=3)
ours_masks, keras_masks = replica_masks(ours), replica_masks(keras_dropout)
old_layer_masks = replica_masks(old_layer)
single_mask = np.asarray(keras.layers.Dropout(0.5, seed=3)(np.ones((64, 32)), training=True)) != 0

with strategy.scope():
    mirrored = enable_strategy_fixes(make_model(initial), strategy)  # as a run does
    compile_with_paper_recipe(mirrored, warmup_steps=10, jit_compile=False)
    # A model with dropout everywhere: every generator of it draws the replica's masks.
    with_dropout = Transformer(
        VOCAB, num_encoder_layers=1, num_decoder_layers=1, d_model=16, num_heads=2,
        intermediate_dim=32, dropout=0.1, attention_dropout=0.1, activation_dropout=0.1,
    )  # fmt: skip
    with_dropout.build()
    enable_strategy_fixes(with_dropout, strategy)
generators = [v for v in with_dropout.non_trainable_variables if v.name == "seed_generator_state"]
replica_generators = [
    generator
    for layer in with_dropout._flatten_layers()
    for generator in layer._seed_generators
    if isinstance(generator, ReplicaSeedGenerator)
]
dataset = tf.data.Dataset.from_tensors(batch()).repeat(6)
history = mirrored.fit(dataset, epochs=2, verbose=0)
print(
    json.dumps(
        {
            "replicas": strategy.num_replicas_in_sync,
            "max_weight_difference": difference,
            "max_weight_change": moved,
            "fit_epochs": len(history.history["loss"]),
            "fit_loss_finite": bool(np.isfinite(history.history["loss"]).all()),
            "steps": int(mirrored.optimizer.iterations.numpy()),
            "keras_dropout_masks_identical": bool((keras_masks[0] == keras_masks[1]).all()),
            "replica_dropout_masks_differ": bool((ours_masks[0] != ours_masks[1]).any()),
            "replica_dropout_kept": [float(m.mean()) for m in ours_masks],
            "replica_0_mask_is_keras_mask": bool((ours_masks[0] == single_mask).all()),
            "old_layer_draws_the_same_masks": all(
                (old == new).all() for old, new in zip(old_layer_masks, ours_masks, strict=True)
            ),
            "seed_generators": len(generators),
            "replica_seed_generators": len(replica_generators),
        }
    )
)
