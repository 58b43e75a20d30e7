"""A batched search loop that stops computing rows (sentences) whose result is final.

A batch of sentences decodes until its slowest sentence is done; without care, every step
still computes the sentences that finished long before. `staged_while_loop` runs the loop in
stages: once a given share of the rows still in the loop is done, it keeps the results of
every row, drops the done rows from every loop variable and goes on with the others in a
smaller batch (CTranslate2 drops finished sentences the same way). It is one
`while_loop` whose body is traced once (under TensorFlow, told which shapes may change), so
the whole search still traces into one graph, with only ops that TF Serving runs.

The loop's variables change their batch size between stages, which needs a backend with
dynamic shapes (TensorFlow, PyTorch): under JAX, whose loops need static shapes, the loop
runs in one stage, as a plain `while_loop`.
"""

from collections.abc import Callable

import keras
from keras import ops

# Drop the done rows once half of the rows still in the loop are done...
DEFAULT_COMPACT_AT = 0.5
# ...in at most this many stages (3 compactions; the last stage runs to the end).
DEFAULT_STAGES = 4


def stages_supported() -> bool:
    """Whether the backend lets a loop variable's batch size change between stages."""
    return keras.backend.backend() != "jax"


def staged_while_loop(
    cond: Callable,
    body: Callable,
    loop_vars: tuple,
    rows_done: Callable,
    take_rows: Callable,
    finish: Callable,
    stages: int = DEFAULT_STAGES,
    compact_at: float = DEFAULT_COMPACT_AT,
) -> tuple:
    """`while cond(*v): v = body(*v)`, leaving out the rows that are done, in stages.

    One loop, whose body is traced once: before a step, once at least `compact_at` of the
    rows still in the loop are done (and fewer than `stages - 1` compactions were made), their
    results are stored and the others go on alone. (Unrolling one loop per stage traced the
    body, a whole decoder step, `stages` times: 3-4x the graph and its tracing time.)

    Args:
        cond: as in `keras.ops.while_loop`, over the tuple `loop_vars`.
        body: as in `keras.ops.while_loop`; returns a tuple like `loop_vars`.
        loop_vars: the loop's variables (nested structures allowed).
        rows_done: `loop_vars -> (rows,) bool`, the rows whose result will not change.
        take_rows: `(loop_vars, rows) -> loop_vars`, the variables of the rows `rows`
            (int, `(kept,)`) only.
        finish: `loop_vars -> tuple` of `(rows, ...)` tensors, each row's result (final for
            the rows that are done).
        stages: at most `stages - 1` compactions; `1` is a plain `while_loop`, and so is any
            backend without `stages_supported()`.
        compact_at: the rows still in the loop leave it once at least this share is done.

    Returns:
        The tuple `finish` returns, for every row of `loop_vars`, in their order.
    """
    loop_vars = tuple(loop_vars)
    if stages <= 1 or not stages_supported():
        return tuple(finish(tuple(ops.while_loop(cond, body, loop_vars))))
    outputs = tuple(finish(loop_vars))
    index = ops.arange(ops.shape(outputs[0])[0], dtype="int32")

    def store(outputs, variables, index):
        return tuple(
            ops.scatter_update(output, index[:, None], ops.cast(result, output.dtype))
            for output, result in zip(outputs, finish(variables), strict=True)
        )

    def compact(variables, outputs, index, compactions, keep):
        return (
            tuple(take_rows(variables, keep)),
            store(outputs, variables, index),
            ops.take(index, keep),
            compactions + 1,
        )

    def staged_cond(variables, outputs, index, compactions):
        return cond(*variables)

    def staged_body(variables, outputs, index, compactions):
        done = rows_done(variables)
        share_done = ops.mean(ops.cast(done, "float32"))
        state = (variables, outputs, index, compactions)
        state = ops.cond(
            ops.logical_and(compactions < stages - 1, share_done >= compact_at),
            lambda: compact(*state, _rows_not_done(done)),
            lambda: state,
        )
        variables, outputs, index, compactions = state
        return tuple(body(*variables)), outputs, index, compactions

    state = (loop_vars, outputs, index, ops.convert_to_tensor(0, "int32"))
    variables, outputs, index, _ = _while_loop_changing_rows(
        staged_cond, staged_body, state, lambda: compact(*state, ops.zeros((0,), "int32"))
    )
    return store(outputs, variables, index)


def _rows_not_done(done):
    return ops.cast(ops.nonzero(ops.logical_not(done))[0], "int32")


def _while_loop_changing_rows(
    cond: Callable, body: Callable, state: tuple, fewer: Callable
) -> tuple:
    """`keras.ops.while_loop(cond, body, state)`, where the loop variables may take the
    shapes of `fewer()` (the state with fewer rows): TensorFlow's loop is told so
    (`shape_invariants`, from the shapes of both); the other backends with
    `stages_supported()` run their loops eagerly, and `fewer` is not called."""
    if keras.backend.backend() != "tensorflow":
        return ops.while_loop(cond, body, state)
    import tensorflow as tf

    invariants = tf.nest.map_structure(
        lambda a, b: a.shape.most_specific_compatible_shape(b.shape), state, fewer()
    )
    return tf.while_loop(cond, body, state, shape_invariants=invariants)


def take_sentences(tensor, sentences, copies: int = 1, axis: int = 0):
    """The rows of `sentences` in `tensor`, which has `copies` rows per sentence along `axis`
    (the hypotheses of a beam, sentence by sentence)."""
    if copies > 1:
        rows = sentences[:, None] * copies + ops.arange(copies, dtype="int32")[None, :]
        sentences = ops.reshape(rows, (-1,))
    return ops.take(tensor, sentences, axis=axis)
