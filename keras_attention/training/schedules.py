"""The paper's learning-rate schedule (Section 5.3, Equation 3)."""

import keras
from keras import ops

from keras_attention.core.checks import check_positive_float, check_positive_int


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)`, Section 5.3.

    Linear warm-up for `warmup_steps` steps, then decay with the inverse square root of the
    step number. Steps count from 1 (Keras' optimizer iterations start at 0).

    Args:
        d_model: model width.
        warmup_steps: warm-up length (4000 in the paper).
        scale: an extra multiplier (1.0 in the paper).

    Example:

    >>> schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    >>> float(schedule(3999))  # the peak, about 7.0e-4
    """

    def __init__(self, d_model: int, warmup_steps: int = 4000, scale: float = 1.0):
        check_positive_int("d_model", d_model)
        check_positive_int("warmup_steps", warmup_steps)
        check_positive_float("scale", scale)
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.scale = scale

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        warmup = ops.cast(self.warmup_steps, "float32")
        factor = ops.minimum(ops.rsqrt(step), step * warmup**-1.5)
        return self.scale * self.d_model**-0.5 * factor

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}
