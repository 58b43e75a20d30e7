"""A batched search loop that stops computing rows (sentences) whose result is final.

A batch of sentences decodes until its slowest sentence is done; without care, every step
still computes the sentences that finished long before. `staged_while_loop` runs the loop in
stages: once a given share of the rows still in the loop is done, it leaves the loop, keeps
the results of every row, drops the done rows from every loop variable and goes on with the
others in a smaller batch (CTranslate2 drops finished sentences the same way). Each stage is
one `keras.ops.while_loop`, so the whole search still traces into one graph, with only ops
that TF Serving runs.

The loop's variables change their batch size between stages, which needs a backend with
dynamic shapes (TensorFlow, PyTorch): under JAX, whose loops need static shapes, the loop
runs in one stage, as a plain `while_loop`.
"""

from collections.abc import Callable

import keras
from keras import ops

# Leave the loop once half of the rows still in it are done...
DEFAULT_COMPACT_AT = 0.5
# ...at most this many times (the last stage runs to the end).
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

    Args:
        cond: as in `keras.ops.while_loop`, over the tuple `loop_vars`.
        body: as in `keras.ops.while_loop`; returns a tuple like `loop_vars`.
        loop_vars: the loop's variables (nested structures allowed).
        rows_done: `loop_vars -> (rows,) bool`, the rows whose result will not change.
        take_rows: `(loop_vars, rows) -> loop_vars`, the variables of the rows `rows`
            (int, `(kept,)`) only.
        finish: `loop_vars -> tuple` of `(rows, ...)` tensors, each row's result (final for
            the rows that are done).
        stages: the most while loops; `1` is a plain `while_loop`, and so is any backend
            without `stages_supported()`.
        compact_at: a stage ends once at least this share of its rows is done.

    Returns:
        The tuple `finish` returns, for every row of the first stage, in their order.
    """
    if not stages_supported():
        stages = 1
    outputs, index = None, None
    for stage in range(stages):
        last = stage == stages - 1

        def stage_cond(*variables, last=last):
            going = cond(*variables)
            if last:
                return going
            # The mean of no rows is NaN, which is not below `compact_at`: an empty stage stops.
            share_done = ops.mean(ops.cast(rows_done(variables), "float32"))
            return ops.logical_and(going, share_done < compact_at)

        loop_vars = tuple(ops.while_loop(stage_cond, body, loop_vars))
        results = tuple(finish(loop_vars))
        if outputs is None:
            outputs = results
        else:
            outputs = tuple(
                ops.scatter_update(output, index[:, None], ops.cast(result, output.dtype))
                for output, result in zip(outputs, results, strict=True)
            )
        if last:
            break
        keep = ops.cast(ops.nonzero(ops.logical_not(rows_done(loop_vars)))[0], "int32")
        loop_vars = tuple(take_rows(loop_vars, keep))
        index = keep if index is None else ops.take(index, keep)
    return outputs


def take_sentences(tensor, sentences, copies: int = 1, axis: int = 0):
    """The rows of `sentences` in `tensor`, which has `copies` rows per sentence along `axis`
    (the hypotheses of a beam, sentence by sentence)."""
    if copies > 1:
        rows = sentences[:, None] * copies + ops.arange(copies, dtype="int32")[None, :]
        sentences = ops.reshape(rows, (-1,))
    return ops.take(tensor, sentences, axis=axis)
