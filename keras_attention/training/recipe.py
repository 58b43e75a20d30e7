"""The paper's training recipe in one call (Section 5)."""

import keras

from keras_attention.training.losses import LabelSmoothedCrossEntropy
from keras_attention.training.metrics import MaskedAccuracy, Perplexity
from keras_attention.training.schedules import TransformerSchedule


def paper_optimizer(
    d_model: int,
    warmup_steps: int = 4000,
    scale: float = 1.0,
    total_steps: int | None = None,
    cooldown_steps: int = 0,
    accumulate_steps: int = 1,
) -> keras.optimizers.Adam:
    """Adam with beta_1=0.9, beta_2=0.98, epsilon=1e-9 on the warm-up schedule (Section 5.3).

    `total_steps` and `cooldown_steps` add `TransformerSchedule`'s final linear decay. With
    `accumulate_steps` k > 1, Keras's gradient accumulation updates the weights once every k
    micro-batches with their mean gradient (feed batches weighted by
    `keras_attention.data.token_weighted_updates`, so that the update's loss is the mean
    over all its target tokens); the schedule and Adam count updates.

    Example:

    >>> optimizer = paper_optimizer(d_model=512)
    >>> optimizer.beta_2, optimizer.epsilon
    (0.98, 1e-09)
    """
    return keras.optimizers.Adam(
        learning_rate=TransformerSchedule(
            d_model, warmup_steps, scale, total_steps, cooldown_steps, accumulate_steps
        ),
        beta_1=0.9,
        beta_2=0.98,
        epsilon=1e-9,
        gradient_accumulation_steps=accumulate_steps if accumulate_steps > 1 else None,
    )


def compile_with_paper_recipe(
    model: keras.Model,
    warmup_steps: int = 4000,
    label_smoothing: float = 0.1,
    learning_rate_scale: float = 1.0,
    total_steps: int | None = None,
    cooldown_steps: int = 0,
    accumulate_steps: int = 1,
    jit_compile="auto",
    pad_id: int = 0,
    **compile_kwargs,
) -> keras.Model:
    """Compiles `model` with the paper's optimizer, schedule, loss and token metrics.

    Args:
        model: a model with a `d_model` attribute (e.g. `Transformer`) returning logits.
        warmup_steps: warm-up of the learning-rate schedule (4000 in the paper).
        label_smoothing: `epsilon_ls` (0.1 in the paper).
        learning_rate_scale: multiplier of the schedule.
        total_steps: the run's last step, for `cooldown_steps`.
        cooldown_steps: the schedule falls linearly to zero over the last this many steps
            (0: the paper's schedule throughout).
        accumulate_steps: micro-batches per update (gradient accumulation, see
            `paper_optimizer`); `total_steps`, `cooldown_steps` and `warmup_steps` count
            updates.
        jit_compile: passed to `model.compile` ("auto" uses XLA where Keras can).
        pad_id: the padding id ignored by the loss and metrics.
        **compile_kwargs: any other `model.compile` arguments.

    Returns:
        The compiled model.

    Example:

    >>> from keras_attention import Transformer
    >>> model = Transformer.from_preset("small", vocabulary_size=8000)
    >>> model = compile_with_paper_recipe(model, warmup_steps=4000)
    >>> type(model.loss).__name__
    'LabelSmoothedCrossEntropy'
    """
    model.compile(
        optimizer=paper_optimizer(
            model.d_model,
            warmup_steps,
            learning_rate_scale,
            total_steps,
            cooldown_steps,
            accumulate_steps,
        ),
        loss=LabelSmoothedCrossEntropy(label_smoothing, pad_id=pad_id),
        metrics=[MaskedAccuracy(pad_id=pad_id), Perplexity(pad_id=pad_id)],
        jit_compile=jit_compile,
        **compile_kwargs,
    )
    return model
