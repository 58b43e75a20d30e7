"""Decoding a request of any size in bounded chunks of length-sorted sentences, in the graph.

A SavedModel that decodes a whole request as one batch needs memory in proportion to the
request (every hypothesis of every sentence, with caches sized to the longest sentence):
2,000 sentences in one request raised a server's memory by 5-9 GB. `map_length_sorted_chunks`
sorts a batch by source length, decodes it `chunk_size` sentences at a time, each chunk cut
to its own longest source (so short sentences do not pay for a long one), one chunk after
another (`parallel_iterations=1`: peak memory is one chunk's), and returns the results in
the request's order. A sentence's translation does not depend on the others in its batch
(see `decoding.beam_search`), so chunked and whole-batch decoding agree.
"""

from collections.abc import Callable

import tensorflow as tf


def map_length_sorted_chunks(
    translate_chunk: Callable,
    source_ids: tf.Tensor,
    lengths: tf.Tensor,
    chunk_size: int,
    extra_inputs: tuple = (),
    output_specs: tuple = ((tf.string, ()), (tf.float32, ())),
    with_positions: bool = False,
) -> tuple:
    """Applies `translate_chunk` to length-sorted chunks of `source_ids`, in request order.

    Args:
        translate_chunk: `(batch, S) int32 ids[, positions][, *extra chunks] -> tuple` of
            tensors with one row per sentence (by default `(translations tf.string (batch,),
            scores float32 (batch,))`; rows may have more axes, such as an n-best list's).
        source_ids: int32 `(batch, S)` source ids, each row its `lengths[i]` tokens then EOS,
            padded with 0.
        lengths: `(batch,)` the number of tokens before EOS in each row.
        chunk_size: the most sentences decoded at once.
        extra_inputs: tensors with a row per sentence that go with it into its chunk (the
            targets to score, say), uncut.
        output_specs: `(dtype, shape of a row)` of each of `translate_chunk`'s outputs, in
            order (`(tf.string, (4,))` for an n-best list of 4 translations a sentence).
        with_positions: also give `translate_chunk` the int32 `(batch,)` positions of its
            sentences in the request (a sampler's keys, which then do not depend on chunks).

    Returns:
        `translate_chunk`'s outputs for the whole batch, in the order of `source_ids`.
    """
    lengths = tf.cast(lengths, tf.int32)
    batch = tf.shape(source_ids)[0]
    order = tf.argsort(lengths, stable=True)
    sorted_ids = tf.gather(source_ids, order)
    sorted_lengths = tf.gather(lengths, order)
    sorted_extra = [tf.gather(tensor, order) for tensor in extra_inputs]
    num_chunks = (batch + chunk_size - 1) // chunk_size
    arrays = tuple(
        tf.TensorArray(dtype, size=num_chunks, infer_shape=False) for dtype, _ in output_specs
    )

    def body(index, arrays):
        start = index * chunk_size
        end = tf.minimum(start + chunk_size, batch)
        width = tf.reduce_max(sorted_lengths[start:end]) + 1  # the chunk's longest, with EOS
        arguments = [sorted_ids[start:end, :width]]
        if with_positions:
            arguments.append(order[start:end])
        arguments += [tensor[start:end] for tensor in sorted_extra]
        outputs = translate_chunk(*arguments)
        return index + 1, tuple(
            array.write(index, tf.cast(output, array.dtype))
            for array, output in zip(arrays, outputs, strict=True)
        )

    _, arrays = tf.while_loop(
        lambda index, *_: index < num_chunks,
        body,
        (tf.constant(0), arrays),
        parallel_iterations=1,  # one chunk in memory at a time
    )
    restore = tf.math.invert_permutation(order)
    results = []
    for array, (_, row_shape) in zip(arrays, output_specs, strict=True):
        result = tf.gather(array.concat(), restore)
        # The shape the caller declared (`TensorArray.concat` loses the rank).
        result.set_shape([None, *row_shape])
        results.append(result)
    return tuple(results)
