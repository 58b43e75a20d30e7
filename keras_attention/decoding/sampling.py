"""Sampling: each token drawn from the model's distribution, optionally sharpened or
flattened (`temperature`) and cut to its `top_k` tokens or its nucleus (`top_p`, Holtzman et
al., 2020), as keras-hub's `TopKSampler`, `TopPSampler` and their `temperature`. For
back-translation, Edunov et al. (2018) found unrestricted sampling (temperature 1, no cut)
better than beam search.

Reproducible: a draw is a function of the seed, the step, the sentence's key (its index in
the caller's request by default) and the sample's number (`decoding.counter_random`), so a
sentence gets the same samples with the same seed in any batch, chunk or backend. Written
with `keras.ops` only; the filters take tensors, so a SavedModel can take them as inputs.
"""

from keras import ops

from keras_attention.core.checks import check_positive_int
from keras_attention.decoding.constraints import DEFAULT_EXTRA_LENGTH, NEG_INF
from keras_attention.decoding.counter_random import combine, uniform
from keras_attention.decoding.row_loop import decode_rows


def sample_search(
    model,
    source_ids,
    num_samples: int | None = None,
    temperature=1.0,
    top_k=0,
    top_p=1.0,
    seed=0,
    sentence_keys=None,
    max_length: int | None = None,
    extra_length: int = DEFAULT_EXTRA_LENGTH,
    use_cache: bool = True,
    drop_finished: bool = True,
):
    """Samples translations token by token (ancestral sampling), with caches.

    Args:
        model: a `DecodingModel` (`decoding.protocol`), e.g. a `Transformer`.
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        num_samples: samples per sentence; `None` for one, without the samples' axis.
        temperature: the log-probabilities are divided by it (> 0; below 1 sharper, above 1
            flatter). A number or a scalar tensor, as are `top_k`, `top_p` and `seed`.
        top_k: draw among the `top_k` most likely tokens only; 0 for all.
        top_p: draw among the fewest most likely tokens whose probability (after the
            temperature) reaches `top_p`; 1.0 for all.
        seed: the random stream's seed (an integer).
        sentence_keys: int `(batch,)`, a number per sentence that, with the seed, picks its
            random stream; default its row (0, 1, ...). The `Translator` passes each
            sentence's index in the request, so that chunking does not change the samples.
        max_length: optional cap on the generated length (EOS included).
        extra_length: a sentence may generate up to `source length + extra_length` tokens.
        use_cache: decode one token a step with key/value caches.
        drop_finished: go on without the sentences whose samples have all ended.

    Returns:
        `(tokens, scores)`: int32 `(batch, L)` (or `(batch, num_samples, L)`) and each
        sample's log-probability under the model (float32, the sum over its tokens, EOS
        included, at temperature 1 and without the cuts: the model's score of the sample).

    Raises:
        ValueError: if `num_samples` is not a positive integer, or a number given for
            `temperature`, `top_k` or `top_p` is out of range (naming it).

    Example:

    >>> from keras_attention import Transformer
    >>> model = Transformer.from_preset("tiny", vocabulary_size=100)  # untrained
    >>> model.build()
    >>> source_ids = np.array([[17, 42, 9, 3], [25, 3, 0, 0]])  # ending with EOS (3), padded
    >>> tokens, scores = sample_search(model, source_ids, num_samples=3, seed=1, max_length=6)
    >>> keras.ops.shape(tokens), keras.ops.shape(scores)
    ((2, 3, 6), (2, 3))
    >>> again, _ = sample_search(model, source_ids, num_samples=3, seed=1, max_length=6)
    >>> bool(keras.ops.all(tokens == again))  # the same seed, the same samples
    True
    """
    copies = 1 if num_samples is None else num_samples
    check_positive_int("num_samples", copies)
    check_sampling(temperature, top_k, top_p)
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    batch = ops.shape(source_ids)[0]
    if sentence_keys is None:
        sentence_keys = ops.arange(batch, dtype="int32")
    keys = combine(ops.repeat(ops.cast(sentence_keys, "int32"), copies, axis=0), 0)
    keys = combine(keys, ops.tile(ops.arange(copies, dtype="int32"), (batch,)))
    keys = combine(keys, ops.cast(seed, "int32"))  # (batch * copies,)

    def pick(log_probs, step, keys):
        logits = filter_logits(log_probs / ops.cast(temperature, "float32"), top_k, top_p)
        noise = uniform(combine(keys, step), ops.shape(logits)[-1])
        gumbel = -ops.log(-ops.log(noise))  # the Gumbel-max trick: argmax = a draw
        return ops.argmax(logits + gumbel, axis=-1)

    tokens, scores = decode_rows(
        model, source_ids, copies, pick, keys, max_length, extra_length, use_cache, drop_finished
    )
    if num_samples is None:
        return tokens[:, 0], scores[:, 0]
    return tokens, scores


def check_sampling(temperature, top_k, top_p) -> None:
    """Raises `ValueError` naming `temperature`, `top_k` or `top_p` when a number given for it
    is out of range (tensors are checked where they are used)."""
    if isinstance(temperature, int | float) and not temperature > 0:
        raise ValueError(f"temperature must be above 0; got temperature={temperature}")
    if isinstance(top_k, int) and (isinstance(top_k, bool) or top_k < 0):
        raise ValueError(f"top_k must be 0 (off) or a positive integer; got top_k={top_k}")
    if isinstance(top_p, int | float) and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] (1 is off); got top_p={top_p}")


def filter_logits(logits, top_k=0, top_p=1.0):
    """`logits` `(rows, V)` with the tokens outside the top `top_k` (0: none cut) and outside
    the nucleus of probability `top_p` (1.0: none cut) set to `NEG_INF`. The most likely token
    always stays. Sorts only when a cut is asked for.

    Example:

    >>> logits = ops.log(ops.array([[0.5, 0.3, 0.15, 0.05]]))
    >>> kept = filter_logits(logits, top_k=0, top_p=0.7)  # 0.5 + 0.3 reach 0.7
    >>> ops.convert_to_numpy(kept > -1e8)
    array([[ True,  True, False, False]])
    >>> ops.convert_to_numpy(filter_logits(logits, top_k=3) > -1e8)
    array([[ True,  True,  True, False]])
    """
    logits = ops.convert_to_tensor(logits, "float32")
    top_k = ops.cast(top_k, "int32")
    top_p = ops.cast(top_p, "float32")
    width = ops.shape(logits)[-1]

    def cut():
        ordered = ops.flip(ops.sort(logits, axis=-1), axis=-1)  # (rows, V), best first
        # top-k: the k-th best logit is the least kept (k beyond V keeps all)
        k = ops.where(top_k > 0, ops.minimum(top_k, width), width)
        kth = ops.take(ordered, k - 1, axis=1)  # (rows,)
        # top-p: keep the best tokens until their probability reaches top_p
        probs = ops.softmax(ordered, axis=-1)
        before = ops.cumsum(probs, axis=-1) - probs  # probability of the better tokens
        inside = ops.logical_or(before < top_p, ops.arange(width)[None, :] == 0)
        least = ops.min(ops.where(inside, ordered, -NEG_INF), axis=-1)  # (rows,)
        threshold = ops.maximum(kth, least)[:, None]
        return ops.where(ops.greater_equal(logits, threshold), logits, NEG_INF)

    wanted = ops.logical_or(top_k > 0, top_p < 1.0)
    return ops.cond(wanted, cut, lambda: logits)
