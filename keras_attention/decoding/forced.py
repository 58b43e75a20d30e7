"""Forced decoding: the model's score of given translations, from one forward pass.

For each sentence pair, the log-probability of every target token given the source and the
target tokens before it (teacher forcing), summed: the score a search would have given that
translation, without searching. Used to filter a corpus, rerank an n-best list or compare
systems on the same outputs; `beam_search`'s scores of its own outputs are the same numbers
(tested), the length penalty applied alike.

The model computes all positions at once through `sequence_log_probs(source_ids,
target_in_ids) -> (batch, T, V)` float32 log-probabilities (the `Transformer` and an
`Ensemble` have it).
"""

from keras import ops

from keras_attention.core.special_tokens import BOS_ID, PAD_ID
from keras_attention.decoding.constraints import length_penalty


def forced_scores(model, source_ids, target_ids, alpha: float = 0.0) -> dict:
    """The log-probability of `target_ids` given `source_ids`, by one forward pass.

    Args:
        model: a model with `sequence_log_probs` (a `Transformer`, an `Ensemble`).
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        target_ids: int `(batch, T)` target ids ending with EOS, padded with 0 (as the
            searches return them).
        alpha: the length penalty's exponent, for `"score"` (0: the raw log-probability).

    Returns:
        A dict of float32 tensors: `"log_prob"` `(batch,)`, the sum of the tokens'
        log-probabilities (EOS included); `"score"` `(batch,)`, that sum divided by the search's
        length penalty `((5 + length) / 6)^alpha` (the number `beam_search` reports);
        `"per_token"` `(batch,)`, the sum divided by the number of tokens; `"tokens"`
        `(batch, T)`, each token's log-probability (0 at padding); `"length"` int32 `(batch,)`.

    Example:

    >>> from keras_attention import Transformer
    >>> model = Transformer.from_preset("tiny", vocabulary_size=100)
    >>> model.build()
    >>> result = forced_scores(model, np.array([[17, 42, 3]]), np.array([[8, 9, 3, 0]]))
    >>> sorted(result), int(result["length"][0])
    (['length', 'log_prob', 'per_token', 'score', 'tokens'], 3)
    """
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    target_ids = ops.convert_to_tensor(target_ids, "int32")
    batch = ops.shape(target_ids)[0]
    bos = ops.full((batch, 1), BOS_ID, "int32")
    target_in = ops.concatenate([bos, target_ids[:, :-1]], axis=1)  # (B, T)
    log_probs = model.sequence_log_probs(source_ids, target_in)  # (B, T, V)
    picked = ops.take_along_axis(log_probs, target_ids[:, :, None], axis=2)[:, :, 0]
    real = ops.not_equal(target_ids, PAD_ID)
    picked = ops.where(real, picked, 0.0)
    length = ops.sum(ops.cast(real, "int32"), axis=1)
    total = ops.sum(picked, axis=1)
    return {
        "log_prob": total,
        "score": total / length_penalty(length, alpha),
        "per_token": total / ops.cast(ops.maximum(length, 1), "float32"),
        "tokens": picked,
        "length": length,
    }
