"""`enable_lora(rank)` on the attention projections of a trained Transformer fine-tunes it:
only the LoRA weights change, and the loss on the new task falls."""

import keras
import numpy as np

from keras_attention.layers.legacy_weights import ProjectionDense
from tests.conftest import to_numpy
from tests.scripts.tiny_transformer import tiny_transformer

VOCABULARY, LENGTH = 24, 6


def task(reverse: bool, seed: int, count: int = 256):
    """Copy (or reverse) a random sequence: `((source, target_in), target_out)`."""
    source = np.random.default_rng(seed).integers(4, VOCABULARY, (count, LENGTH)).astype("int32")
    target = source[:, ::-1] if reverse else source
    bos = np.full((count, 1), 2, "int32")
    return (source, np.concatenate([bos, target[:, :-1]], axis=1)), target


def compiled(model: keras.Model, learning_rate: float) -> keras.Model:
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def test_lora_fine_tunes_only_the_lora_weights_and_lowers_the_loss():
    keras.utils.set_random_seed(3)
    model = tiny_transformer(VOCABULARY)
    inputs, outputs = task(reverse=False, seed=0)
    history = compiled(model, 1e-2).fit(inputs, outputs, batch_size=32, epochs=20, verbose=0)
    assert history.history["loss"][-1] < 0.5  # it copies (measured 0.17; ln 24 = 3.2)

    projections = [layer for layer in model._flatten_layers() if isinstance(layer, ProjectionDense)]
    assert len(projections) == 12  # Q, K, V, output in 3 attention layers
    for layer in model._flatten_layers(include_self=False):
        if not isinstance(layer, ProjectionDense) and len(list(layer._flatten_layers())) == 1:
            layer.trainable = False  # embeddings, norms, feed-forward layers
    for dense in projections:
        dense.enable_lora(2)
        dense.bias.trainable = False
    lora = {id(v) for dense in projections for v in (dense.lora_kernel_a, dense.lora_kernel_b)}
    assert {id(v) for v in model.trainable_variables} == lora

    before = {v.path: to_numpy(v) for v in model.variables}
    new_inputs, new_outputs = task(reverse=True, seed=1)
    held_out_inputs, held_out_outputs = task(reverse=True, seed=2, count=64)
    compiled(model, 1e-2)
    loss_before = model.evaluate(held_out_inputs, held_out_outputs, verbose=0)
    model.fit(new_inputs, new_outputs, batch_size=32, epochs=20, verbose=0)
    loss_after = model.evaluate(held_out_inputs, held_out_outputs, verbose=0)

    changed = {v.path for v in model.variables if not np.array_equal(to_numpy(v), before[v.path])}
    lora_paths = {v.path for v in model.variables if id(v) in lora}
    assert changed, "nothing was trained"
    assert changed <= lora_paths, sorted(changed - lora_paths)[:3]
    # Measured: 6.6 before (a copier asked to reverse), 0.19 after.
    assert loss_after < 0.5 * loss_before, (loss_before, loss_after)
