"""`staged_while_loop`: a loop that leaves out its done rows, in stages, with the results of a
plain `while_loop` in the rows' order."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.decoding.staged_loop import (
    staged_while_loop,
    stages_supported,
    take_sentences,
)
from tests.conftest import to_numpy

# Rows needing 1 to 8 steps, shuffled, so that the results must go back to their rows.
TARGETS = np.array([5, 1, 8, 3, 7, 2, 6, 4], dtype="int32")


def count_up(targets: np.ndarray, stages: int, compact_at: float = 0.5):
    """Counts each row up to its target, one a step; returns the counts, the done flags at the
    end, and the batch size the body saw at each step."""
    seen = []

    def cond(step, counts, targets):
        return ops.logical_not(ops.all(counts >= targets))

    def body(step, counts, targets):
        seen.append(int(ops.shape(counts)[0]))
        return step + 1, counts + ops.cast(counts < targets, "int32"), targets

    def take_rows(variables, rows):
        step, counts, targets = variables
        return step, ops.take(counts, rows), ops.take(targets, rows)

    counts, done = staged_while_loop(
        cond,
        body,
        (ops.convert_to_tensor(0), ops.zeros((len(targets),), "int32"), ops.array(targets)),
        rows_done=lambda variables: variables[1] >= variables[2],
        take_rows=take_rows,
        finish=lambda variables: (variables[1], variables[1] >= variables[2]),
        stages=stages,
        compact_at=compact_at,
    )
    return to_numpy(counts), to_numpy(done), seen


@pytest.mark.parametrize("stages", [1, 2, 4, 8])
def test_every_row_gets_its_result_in_its_place(stages: int):
    counts, done, _ = count_up(TARGETS, stages)
    np.testing.assert_array_equal(counts, TARGETS)
    assert done.all()


@pytest.mark.skipif(not stages_supported(), reason="JAX loops keep their shapes: one stage")
def test_the_done_rows_leave_the_loop():
    _, _, whole = count_up(TARGETS, stages=1)
    assert whole == [8] * 8
    # Half the rows are done after 4 steps, then half of the other 4 after 2 more, ...
    _, _, staged = count_up(TARGETS, stages=4)
    assert staged == [8, 8, 8, 8, 4, 4, 2, 1]
    _, _, eager = count_up(TARGETS, stages=4, compact_at=0.125)
    # One row leaves after each of the first 3 steps; the last stage keeps its 5 rows.
    assert eager == [8, 7, 6, 5, 5, 5, 5, 5]


@pytest.mark.skipif(stages_supported(), reason="the other backends drop rows")
def test_under_jax_the_loop_keeps_its_rows():
    counts, _, seen = count_up(TARGETS, stages=4)
    np.testing.assert_array_equal(counts, TARGETS)
    assert len(seen) <= 1  # traced once


def test_a_batch_done_from_the_start_is_returned_as_it_is():
    counts, done, seen = count_up(np.zeros(3, "int32"), stages=4)
    np.testing.assert_array_equal(counts, [0, 0, 0])
    assert done.all()
    if stages_supported():  # JAX traces the body once, run or not
        assert seen == []


def test_take_sentences_takes_every_copy_of_a_sentence():
    tensor = np.arange(12).reshape(2, 6)  # 3 sentences, 2 copies each, along axis 1
    taken = to_numpy(take_sentences(ops.array(tensor), ops.array([2, 0], "int32"), 2, axis=1))
    np.testing.assert_array_equal(taken, tensor[:, [4, 5, 0, 1]])


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function tracing")
def test_a_traced_loop_traces_its_body_once():
    """One loop for every stage: the body (in a search, a whole decoder step) is traced once,
    not once per stage, and the traced loop still drops its done rows."""
    import tensorflow as tf

    traced = []
    row_steps = tf.Variable(0)  # rows computed, summed over the steps

    def cond(step, counts, targets):
        return ops.logical_not(ops.all(counts >= targets))

    def body(step, counts, targets):
        traced.append(1)
        row_steps.assign_add(tf.shape(counts)[0])
        return step + 1, counts + ops.cast(counts < targets, "int32"), targets

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def count(targets):
        return staged_while_loop(
            cond,
            body,
            (ops.convert_to_tensor(0), ops.zeros_like(targets), targets),
            rows_done=lambda variables: variables[1] >= variables[2],
            take_rows=lambda v, keep: (v[0], ops.take(v[1], keep), ops.take(v[2], keep)),
            finish=lambda variables: (variables[1],),
            stages=4,
        )[0]

    np.testing.assert_array_equal(count(TARGETS).numpy(), TARGETS)
    assert len(traced) == 1
    assert int(row_steps.numpy()) == 8 + 8 + 8 + 8 + 4 + 4 + 2 + 1  # as eagerly, above
