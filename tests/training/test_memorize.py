"""End to end: a tiny Transformer trained with the paper's recipe memorises a toy task.

Reversing random token sequences of different lengths (so that padding and the masks
matter), trained with `model.fit` and `compile_with_paper_recipe`. Checked twice: token
accuracy with teacher forcing, and greedy decoding one token at a time from BOS (which a
decoder that could see future target tokens in training fails).
"""

import keras
import numpy as np
import pytest

from keras_attention.models import Transformer
from keras_attention.training import compile_with_paper_recipe
from tests.conftest import to_numpy
from tests.training.test_losses import weighted_token_mean

VOCABULARY_SIZE, BOS, EOS = 12, 1, 2  # 0 is padding; tokens are 3 .. 11
NUM_PAIRS, MAX_LENGTH = 32, 6
# Set from the spread measured over seeds, dtype policies and kernels, less a margin; a
# decoder that sees later target tokens decodes greedily at 0.32 to 0.35 (docs/development.md,
# "Tests that hold on any machine").
MAX_EPOCHS, TARGET_ACCURACY = 150, 0.92


def reversal_pairs(num_pairs: int, max_length: int, seed: int) -> tuple:
    """Random sequences of 2 .. `max_length` tokens and their reversal: `source (N, L)`,
    `target_in (N, L + 1)` = BOS + reversed, `target_out (N, L + 1)` = reversed + EOS."""
    rng = np.random.default_rng(seed)
    source = np.zeros((num_pairs, max_length), "int32")
    target_in = np.zeros((num_pairs, max_length + 1), "int32")
    target_out = np.zeros((num_pairs, max_length + 1), "int32")
    for row in range(num_pairs):
        length = rng.integers(2, max_length + 1)
        tokens = rng.integers(EOS + 1, VOCABULARY_SIZE, size=length)
        source[row, :length] = tokens
        target_in[row, : length + 1] = [BOS, *tokens[::-1]]
        target_out[row, : length + 1] = [*tokens[::-1], EOS]
    return source, target_in, target_out


def greedy_decode(model: Transformer, source: np.ndarray, length: int) -> np.ndarray:
    """Arg-max decoding from BOS, `length` tokens, each fed back as the next input.

    The decoder input keeps one shape, `(N, length)`, the positions not yet decoded holding
    padding: a position's logits depend only on the positions before it (a decoder that
    peeks at later ones sees padding there, which it never saw in training). One shape is
    what makes this fast under eager JAX, which compiles every op for every new shape.
    """
    encoded, source_mask = model.encode(source)
    ids = np.zeros((len(source), length + 1), dtype="int32")
    ids[:, 0] = BOS
    for position in range(length):
        logits = to_numpy(model.decode(ids[:, :length], encoded, source_mask))
        ids[:, position + 1] = logits[:, position].argmax(axis=-1)
    return ids[:, 1:]


class StopWhenMemorised(keras.callbacks.Callback):
    """Stops training once every real target token of the epoch's batches was right for
    `epochs` epochs in a row (the training accuracy, without dropout; no validation pass,
    which would evaluate the pairs a second time every epoch: the test checks the final
    weights itself)."""

    def __init__(self, epochs: int = 3):
        super().__init__()
        self.epochs, self.in_a_row = epochs, 0

    def on_epoch_end(self, epoch, logs=None):
        self.in_a_row = self.in_a_row + 1 if logs["accuracy"] >= 0.999 else 0
        if self.in_a_row == self.epochs:
            self.model.stop_training = True


@pytest.fixture(params=["float32", "mixed_bfloat16", "mixed_float16"])
def policy(request):
    """The dtype policy the model is built in (mixed ones under TensorFlow only, the CI's
    backend for them); the global policy is restored afterwards."""
    if request.param != "float32" and keras.backend.backend() != "tensorflow":
        pytest.skip("mixed precision training is checked under TensorFlow")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(request.param)
    yield request.param
    keras.config.set_dtype_policy(previous)


def memorise(policy: str) -> dict:
    """Trains the tiny Transformer on the reversal pairs under the current dtype policy and
    seed; returns the loss of the first and last epochs, the number of epochs and three token
    accuracies on the training pairs: `teacher_forced`, `padded` (teacher forced with more
    padding than in training) and `greedy` (decoded one token at a time from BOS)."""
    source, target_in, target_out = reversal_pairs(NUM_PAIRS, MAX_LENGTH, seed=0)
    real = (target_out != 0).astype(np.float64)
    model = Transformer(
        vocabulary_size=VOCABULARY_SIZE,
        num_encoder_layers=2,
        num_decoder_layers=2,
        d_model=32,
        num_heads=4,
        intermediate_dim=64,
        dropout=0.0,
    )
    # Peak learning rate 0.3 * 32^-0.5 * 30^-0.5 = 0.01 at step 30.
    # JAX runs its steps compiled (eager JAX is slow); TensorFlow and PyTorch eagerly enough.
    jit = keras.backend.backend() == "jax"
    compile_with_paper_recipe(model, warmup_steps=30, learning_rate_scale=0.3, jit_compile=jit)
    assert model.compute_dtype == {"float32": "float32", "mixed_bfloat16": "bfloat16",
                                   "mixed_float16": "float16"}[policy]  # fmt: skip
    scaled = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert scaled == (policy == "mixed_float16")
    history = model.fit(
        (source, target_in),
        target_out,
        batch_size=16,
        epochs=MAX_EPOCHS,
        verbose=0,
        callbacks=[StopWhenMemorised()],
    )
    logits = to_numpy(model.predict((source, target_in), batch_size=NUM_PAIRS, verbose=0))
    # More padding than in training must not matter (the padding masks at work).
    more_padding = (np.pad(source, ((0, 0), (0, 4))), np.pad(target_in, ((0, 0), (0, 3))))
    padded = to_numpy(model.predict(more_padding, batch_size=NUM_PAIRS, verbose=0))
    greedy = greedy_decode(model, source, target_out.shape[1])
    return {
        "epochs": len(history.history["loss"]),
        "first_loss": history.history["loss"][0],
        "last_loss": history.history["loss"][-1],
        "teacher_forced": weighted_token_mean(logits.argmax(axis=-1) == target_out, real),
        "padded": weighted_token_mean(
            padded[:, : target_out.shape[1]].argmax(-1) == target_out, real
        ),
        "greedy": weighted_token_mean(greedy == target_out, real),
    }


def test_tiny_transformer_memorises_reversal_with_the_paper_recipe(policy: str):
    """Also under mixed precision: bfloat16, and float16 with Keras's dynamic loss scaling
    (`compile` wraps the optimizer in a `LossScaleOptimizer`), reach the same accuracy."""
    result = memorise(policy)
    assert result["last_loss"] < result["first_loss"]
    for name in ("teacher_forced", "padded", "greedy"):
        assert result[name] >= TARGET_ACCURACY, f"{name} accuracy {result}"
