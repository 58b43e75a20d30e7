"""The paper's learning-rate schedule (Section 5.3, Equation 3), with an optional cool-down."""

import keras
from keras import ops

from keras_attention.core.checks import check_int_at_least, check_positive_float, check_positive_int


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)`, Section 5.3.

    Linear warm-up for `warmup_steps` steps, then decay with the inverse square root of the
    step number. Steps count from 1 (Keras' optimizer iterations start at 0).

    With `cooldown_steps > 0` the rate is also multiplied by
    `clip((total_steps + 1 - step) / cooldown_steps, 0, 1)`: it follows the paper until the
    last `cooldown_steps` steps, then falls linearly, to `1 / cooldown_steps` of the paper's
    rate at step `total_steps` and to zero after it. Under a fixed
    budget the last weights then sit at the bottom of a basin rather than being thrown
    about by a rate still at 60% of its peak (see `docs/experiments/multi30k-en-de.md`).

    Args:
        d_model: model width.
        warmup_steps: warm-up length (4000 in the paper).
        scale: an extra multiplier (1.0 in the paper).
        total_steps: the last step of training; needed when `cooldown_steps > 0`.
        cooldown_steps: length of the final linear decay to zero (0: none, as in the paper).
        accumulate_steps: micro-batches per update under gradient accumulation: the rate
            follows the updates, `floor(iterations / accumulate_steps)`, since Keras's
            optimizer hands a schedule the count of micro-batches. The other arguments count
            updates.

    Example:

    >>> schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    >>> round(float(schedule(3999)), 6)  # the peak
    0.000699
    >>> cooled = TransformerSchedule(512, 4000, total_steps=100_000, cooldown_steps=20_000)
    >>> float(cooled(100_000))  # zero once training is over
    0.0
    """

    def __init__(
        self,
        d_model: int,
        warmup_steps: int = 4000,
        scale: float = 1.0,
        total_steps: int | None = None,
        cooldown_steps: int = 0,
        accumulate_steps: int = 1,
    ):
        check_positive_int("d_model", d_model)
        check_positive_int("accumulate_steps", accumulate_steps)
        check_positive_int("warmup_steps", warmup_steps)
        check_positive_float("scale", scale)
        check_int_at_least("cooldown_steps", cooldown_steps, 0)
        check_positive_int("total_steps", total_steps, allow_none=True)
        if cooldown_steps and (total_steps is None or cooldown_steps > total_steps):
            raise ValueError(
                "cooldown_steps needs total_steps >= cooldown_steps; got "
                f"total_steps={total_steps}, cooldown_steps={cooldown_steps}"
            )
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.scale = scale
        self.total_steps = total_steps
        self.cooldown_steps = cooldown_steps
        self.accumulate_steps = accumulate_steps

    def __call__(self, step):
        if self.accumulate_steps > 1:
            step = ops.floor_divide(step, self.accumulate_steps)
        step = ops.cast(step, "float32") + 1.0
        warmup = ops.cast(self.warmup_steps, "float32")
        factor = ops.minimum(ops.rsqrt(step), step * warmup**-1.5)
        if self.cooldown_steps:
            remaining = (float(self.total_steps) + 1.0 - step) / float(self.cooldown_steps)
            factor = factor * ops.clip(remaining, 0.0, 1.0)
        return self.scale * self.d_model**-0.5 * factor

    def get_config(self):
        return {
            "d_model": self.d_model,
            "warmup_steps": self.warmup_steps,
            "scale": self.scale,
            "total_steps": self.total_steps,
            "cooldown_steps": self.cooldown_steps,
            "accumulate_steps": self.accumulate_steps,
        }
