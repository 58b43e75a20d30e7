"""Gradient accumulation with the loss of an update normalised by all its target tokens.

Keras's optimizer (`gradient_accumulation_steps=k`) applies the mean of k micro-batches'
gradients. Each micro-batch's loss is a mean over its own target tokens, so that mean would
weigh a token of a short micro-batch more than one of a long micro-batch. Weighting micro-batch
i of an update by `k * N_i / N` (its share of the update's N target tokens) makes the mean of
the k gradients the gradient of the update's loss summed over its tokens and divided by N:
exactly one batch k times larger (the paper's 25,000 target tokens per update on fewer
devices). The weights travel as `model.fit`'s sample weights.
"""

import tensorflow as tf

from keras_attention.core.checks import check_int_at_least


def token_weighted_updates(
    batches: tf.data.Dataset, accumulate_steps: int, pad_id: int = 0
) -> tf.data.Dataset:
    """Groups `batches` in updates of `accumulate_steps` and weights each by its token share.

    Args:
        batches: `((source, target_in), target_out)` batches (`make_batches`,
            `stream_batches`).
        accumulate_steps: micro-batches per update, the optimizer's
            `gradient_accumulation_steps`.
        pad_id: the target id that is not a token.

    Returns:
        `((source, target_in), target_out, weight)` batches, `weight` float32 of
        `target_out`'s shape, everywhere `accumulate_steps * N_i / N`; a last group of fewer than
        `accumulate_steps` batches is left out (it would straddle two updates), and a known
        number of batches stays known.

    Raises:
        ValueError: if `accumulate_steps` is not an integer >= 1.
    """
    check_int_at_least("accumulate_steps", accumulate_steps, 1)
    steps = accumulate_steps

    def tokens(target):
        return tf.cast(tf.math.count_nonzero(tf.not_equal(target, pad_id)), tf.float32)

    def weighted(inputs, targets):
        total = targets.reduce(tf.constant(0.0), lambda count, target: count + tokens(target))
        return tf.data.Dataset.zip((inputs, targets)).map(
            lambda x, y: (x, y, tf.fill(tf.shape(y), steps * tokens(y) / total))
        )

    grouped = batches.window(steps, drop_remainder=True).flat_map(weighted)
    known = int(batches.cardinality())
    if known >= 0:
        grouped = grouped.apply(tf.data.experimental.assert_cardinality(known // steps * steps))
    return grouped
