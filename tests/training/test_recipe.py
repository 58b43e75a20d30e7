"""The paper's training recipe (Section 5): Adam on the warm-up schedule, loss and metrics."""

import keras
import numpy as np
import pytest

from keras_attention.models import Transformer
from keras_attention.training import (
    LabelSmoothedCrossEntropy,
    TransformerSchedule,
    compile_with_paper_recipe,
    paper_optimizer,
)
from tests.conftest import to_numpy
from tests.training.test_losses import reference_loss
from tests.training.test_metrics import reference_metric
from tests.training.test_schedules import reference_rate

VOCABULARY_SIZE, D_MODEL = 9, 8
SOURCE = np.array([[3, 4, 5, 6], [7, 8, 0, 0], [2, 5, 5, 0]], dtype="int32")
TARGET_IN = np.array([[1, 6, 5, 4], [1, 8, 7, 0], [1, 5, 0, 0]], dtype="int32")
TARGET_OUT = np.array([[6, 5, 4, 2], [8, 7, 2, 0], [5, 2, 0, 0]], dtype="int32")
# Non-default recipe arguments.
RECIPE = {"warmup_steps": 20, "label_smoothing": 0.2, "learning_rate_scale": 0.5}


def tiny_model() -> Transformer:
    return Transformer(
        vocabulary_size=VOCABULARY_SIZE,
        num_encoder_layers=1,
        num_decoder_layers=1,
        d_model=D_MODEL,
        num_heads=2,
        intermediate_dim=16,
        dropout=0.0,
    )


def assert_paper_optimizer(
    optimizer: keras.optimizers.Optimizer, d_model: int, warmup_steps: int, scale: float
) -> None:
    """Adam(beta_1=0.9, beta_2=0.98, epsilon=1e-9) on `TransformerSchedule` (Section 5.3)."""
    assert isinstance(optimizer, keras.optimizers.Adam)
    config = optimizer.get_config()
    assert (config["beta_1"], config["beta_2"], config["epsilon"]) == (0.9, 0.98, 1e-9)
    schedule = keras.optimizers.schedules.deserialize(config["learning_rate"])
    assert isinstance(schedule, TransformerSchedule)
    assert schedule.get_config() == {
        "d_model": d_model,
        "warmup_steps": warmup_steps,
        "scale": scale,
        "total_steps": None,
        "cooldown_steps": 0,
        "accumulate_steps": 1,
    }
    for iteration in (0, 3):
        optimizer.iterations.assign(iteration)
        expected = reference_rate(iteration, d_model, warmup_steps, scale)
        np.testing.assert_allclose(float(to_numpy(optimizer.learning_rate)), expected, rtol=1e-5)
    optimizer.iterations.assign(0)


def assert_evaluate_matches_references(model: Transformer, label_smoothing: float) -> None:
    """`model.evaluate` on one batch reports the label-smoothed loss, the token accuracy and
    the perplexity over the real target tokens, as the NumPy references compute them."""
    logits = to_numpy(model((SOURCE, TARGET_IN))).astype(np.float64)
    results = model.evaluate(
        (SOURCE, TARGET_IN), TARGET_OUT, batch_size=len(SOURCE), return_dict=True, verbose=0
    )
    assert set(results) == {"loss", "accuracy", "perplexity"}
    expected = reference_loss(TARGET_OUT, logits, label_smoothing)
    np.testing.assert_allclose(results["loss"], expected, rtol=1e-5)
    for name in ("accuracy", "perplexity"):
        expected = reference_metric(name, TARGET_OUT, logits)
        np.testing.assert_allclose(results[name], expected, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, expected", [({}, (4000, 1.0)), ({"warmup_steps": 10, "scale": 2.0}, (10, 2.0))]
)
def test_paper_optimizer(kwargs: dict, expected: tuple):
    assert_paper_optimizer(paper_optimizer(d_model=16, **kwargs), 16, *expected)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_compile_sets_optimizer_loss_metrics_and_jit(jit_compile: bool):
    model = compile_with_paper_recipe(
        tiny_model(), **RECIPE, jit_compile=jit_compile, pad_id=3, run_eagerly=False
    )
    assert model.jit_compile is jit_compile
    assert model.run_eagerly is False
    assert_paper_optimizer(model.optimizer, D_MODEL, 20, 0.5)
    assert isinstance(model.loss, LabelSmoothedCrossEntropy)
    assert (model.loss.label_smoothing, model.loss.pad_id) == (0.2, 3)


def test_defaults_are_the_papers():
    model = compile_with_paper_recipe(tiny_model(), jit_compile=False)
    assert_paper_optimizer(model.optimizer, D_MODEL, 4000, 1.0)
    assert (model.loss.label_smoothing, model.loss.pad_id) == (0.1, 0)


def test_evaluate_reports_loss_accuracy_and_perplexity_over_real_tokens():
    model = compile_with_paper_recipe(tiny_model(), **RECIPE, jit_compile=False)
    assert_evaluate_matches_references(model, label_smoothing=0.2)


def test_compiled_model_round_trips_through_a_keras_file(tmp_path):
    model = compile_with_paper_recipe(tiny_model(), **RECIPE, jit_compile=False)
    model.fit((SOURCE, TARGET_IN), TARGET_OUT, batch_size=3, epochs=1, verbose=0)
    path = tmp_path / "compiled.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert int(to_numpy(loaded.optimizer.iterations)) == 1
    assert_paper_optimizer(loaded.optimizer, D_MODEL, 20, 0.5)
    assert isinstance(loaded.loss, LabelSmoothedCrossEntropy)
    np.testing.assert_array_equal(
        to_numpy(loaded((SOURCE, TARGET_IN))), to_numpy(model((SOURCE, TARGET_IN)))
    )
    assert_evaluate_matches_references(loaded, label_smoothing=0.2)
