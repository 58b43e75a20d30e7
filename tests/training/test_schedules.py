"""TransformerSchedule (Section 5.3, Equation 3) against the formula in float64 Python."""

import keras
import numpy as np
import pytest

from keras_attention.training import TransformerSchedule
from tests.conftest import to_numpy

SETTINGS = [(512, 4000, 1.0), (16, 10, 1.0), (32, 25, 0.3)]


def reference_rate(iteration: int, d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """`scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)` with `step = iteration + 1`."""
    step = float(iteration + 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def rates(schedule: TransformerSchedule, iterations: np.ndarray) -> np.ndarray:
    return np.array([float(to_numpy(schedule(int(i)))) for i in iterations])


@pytest.mark.parametrize("d_model, warmup_steps, scale", SETTINGS)
def test_matches_formula(d_model: int, warmup_steps: int, scale: float):
    schedule = TransformerSchedule(d_model, warmup_steps, scale)
    iterations = [0, 1, 9, warmup_steps // 2, warmup_steps - 2, warmup_steps - 1, warmup_steps]
    iterations += [3 * warmup_steps, 100 * warmup_steps]
    expected = [reference_rate(i, d_model, warmup_steps, scale) for i in iterations]
    np.testing.assert_allclose(rates(schedule, iterations), expected, rtol=1e-5)
    # Also as a vector of steps and as a tensor (what the optimizer passes).
    vector = to_numpy(schedule(keras.ops.convert_to_tensor(np.array(iterations), "int64")))
    np.testing.assert_allclose(vector, expected, rtol=1e-5)


@pytest.mark.parametrize("d_model, warmup_steps, scale", SETTINGS[1:])
def test_peak_at_warmup_then_monotonic_decay(d_model: int, warmup_steps: int, scale: float):
    schedule = TransformerSchedule(d_model, warmup_steps, scale)
    values = rates(schedule, np.arange(4 * warmup_steps))
    peak = int(values.argmax())
    assert peak == warmup_steps - 1  # step == warmup_steps
    np.testing.assert_allclose(values[peak], scale * (d_model * warmup_steps) ** -0.5, rtol=1e-5)
    assert np.all(np.diff(values[: peak + 1]) > 0)
    assert np.all(np.diff(values[peak:]) < 0)


def test_serialization_round_trip():
    schedule = TransformerSchedule(d_model=32, warmup_steps=25, scale=0.3)
    config = schedule.get_config()
    assert config == {
        "d_model": 32,
        "warmup_steps": 25,
        "scale": 0.3,
        "total_steps": None,
        "cooldown_steps": 0,
        "accumulate_steps": 1,
    }
    iterations = [0, 7, 60]
    expected = [reference_rate(i, 32, 25, 0.3) for i in iterations]
    serialized = keras.optimizers.schedules.serialize(schedule)
    for restored in (
        TransformerSchedule.from_config(config),
        keras.optimizers.schedules.deserialize(serialized),
    ):
        assert isinstance(restored, TransformerSchedule)
        assert restored.get_config() == config
        np.testing.assert_allclose(rates(restored, iterations), expected, rtol=1e-5)


def cooled_reference(iteration: int, total_steps: int, cooldown_steps: int) -> float:
    """The paper's rate for d_model 16, warm-up 10, times the linear cool-down factor."""
    step = iteration + 1
    factor = min(max((total_steps + 1 - step) / cooldown_steps, 0.0), 1.0)
    return reference_rate(iteration, 16, 10) * factor


def test_cooldown_matches_formula():
    schedule = TransformerSchedule(16, 10, total_steps=50, cooldown_steps=20)
    iterations = np.arange(60)
    expected = [cooled_reference(int(i), 50, 20) for i in iterations]
    np.testing.assert_allclose(rates(schedule, iterations), expected, rtol=1e-5, atol=1e-12)
    values = rates(schedule, iterations)
    # The paper's rate up to the cool-down, then a straight fall: the last of the 50 steps
    # (iteration 49) still moves the weights, everything after it is zero.
    np.testing.assert_allclose(
        values[:30], [reference_rate(i, 16, 10) for i in range(30)], rtol=1e-5
    )
    assert values[49] > 0.0 and np.all(values[50:] == 0.0)
    assert np.all(np.diff(values[30:51]) < 0)


def test_cooldown_round_trips_and_old_configs_load():
    schedule = TransformerSchedule(16, 10, total_steps=50, cooldown_steps=20)
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert restored.get_config() == schedule.get_config()
    np.testing.assert_allclose(rates(restored, [40, 49]), rates(schedule, [40, 49]))
    # A schedule saved before the cool-down existed has no such keys: the paper's schedule.
    old = TransformerSchedule.from_config({"d_model": 16, "warmup_steps": 10, "scale": 1.0})
    np.testing.assert_allclose(
        rates(old, [40, 200]), [reference_rate(i, 16, 10) for i in (40, 200)], rtol=1e-5
    )


def test_optimizer_with_the_schedule_round_trips():
    schedule = TransformerSchedule(d_model=32, warmup_steps=25, scale=0.3)
    optimizer = keras.optimizers.Adam(learning_rate=schedule)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    for iteration in (0, 7, 60):
        restored.iterations.assign(iteration)
        rate = float(to_numpy(restored.learning_rate))
        np.testing.assert_allclose(rate, reference_rate(iteration, 32, 25, 0.3), rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"d_model": 0}, "d_model=0"),
        ({"d_model": 16.0}, "d_model=16.0"),
        ({"warmup_steps": 0}, "warmup_steps=0"),
        ({"warmup_steps": -5}, "warmup_steps=-5"),
        ({"scale": 0.0}, "scale=0.0"),
        ({"scale": -1.0}, "scale=-1.0"),
        ({"cooldown_steps": -1}, "cooldown_steps=-1"),
        ({"cooldown_steps": 5}, "total_steps=None, cooldown_steps=5"),
        ({"cooldown_steps": 5, "total_steps": 4}, "total_steps=4, cooldown_steps=5"),
        ({"total_steps": 0}, "total_steps=0"),
    ],
)
def test_invalid_arguments_are_named(kwargs: dict, name: str):
    with pytest.raises(ValueError, match=name):
        TransformerSchedule(**{"d_model": 16, "warmup_steps": 10, **kwargs})
