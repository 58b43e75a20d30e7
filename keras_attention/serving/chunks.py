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
) -> tuple[tf.Tensor, tf.Tensor]:
    """Applies `translate_chunk` to length-sorted chunks of `source_ids`, in request order.

    Args:
        translate_chunk: `(batch, S) int32 ids -> (translations tf.string (batch,),
            scores float32 (batch,))`.
        source_ids: int32 `(batch, S)` source ids, each row its `lengths[i]` tokens then EOS,
            padded with 0.
        lengths: `(batch,)` the number of tokens before EOS in each row.
        chunk_size: the most sentences decoded at once.

    Returns:
        `(translations, scores)` of the whole batch, in the order of `source_ids`.
    """
    lengths = tf.cast(lengths, tf.int32)
    batch = tf.shape(source_ids)[0]
    order = tf.argsort(lengths, stable=True)
    sorted_ids = tf.gather(source_ids, order)
    sorted_lengths = tf.gather(lengths, order)
    num_chunks = (batch + chunk_size - 1) // chunk_size
    translations = tf.TensorArray(tf.string, size=num_chunks, infer_shape=False)
    scores = tf.TensorArray(tf.float32, size=num_chunks, infer_shape=False)

    def body(index, translations, scores):
        start = index * chunk_size
        end = tf.minimum(start + chunk_size, batch)
        width = tf.reduce_max(sorted_lengths[start:end]) + 1  # the chunk's longest, with EOS
        chunk_translations, chunk_scores = translate_chunk(sorted_ids[start:end, :width])
        return (
            index + 1,
            translations.write(index, chunk_translations),
            scores.write(index, tf.cast(chunk_scores, tf.float32)),
        )

    _, translations, scores = tf.while_loop(
        lambda index, *_: index < num_chunks,
        body,
        (tf.constant(0), translations, scores),
        parallel_iterations=1,  # one chunk in memory at a time
    )
    restore = tf.math.invert_permutation(order)
    translations = tf.gather(translations.concat(), restore)
    scores = tf.gather(scores.concat(), restore)
    # Vectors, as the signature declares them (`TensorArray.concat` loses the rank).
    translations.set_shape([None])
    scores.set_shape([None])
    return translations, scores
