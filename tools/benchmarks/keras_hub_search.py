"""keras-hub's `GreedySampler` and `BeamSampler` driven by our model's cached decoding step.

A keras-hub sampler is called as `sampler(next, prompt, cache, index, mask, stop_token_ids)`:
it fills `prompt` from column `index` on, calling `next(prompt, cache, index)` for the logits
of the token at `index`, which must return `(logits, hidden_states, cache)`. Here the prompt
is `[BOS, 0, 0, ...]` (one column more than the longest output allowed) and `next` feeds the
token at `index - 1` through `Transformer.decode` with the key/value caches, as our own
searches do. The sampler carries the self-attention caches (the per-block fixed-size
buffers of `model.decoder.initial_cache`, `(2, rows, heads, length, head_dim)`, held rows
first, `(rows, 2, ...)`, since the sampler repeats and reorders a cache along its first
axis; `next` swaps the two axes back and forth, two copies a step that ours do not make) as
its `cache`: the beam sampler repeats them for its beams and reorders them after every step,
like ours. The
encoder output and the cross-attention caches never change, so `next` closes over them,
repeated for the beams once.

What `next` adds to the model's logits, so that the samplers search what ours search:

- `<pad>` and `<s>` are never generated (our searches ban them too);
- at a sentence's length limit (`source length + extra_length` tokens, EOS included) only EOS
  may follow;
- after EOS a hypothesis is finished: only `<pad>` may follow, with probability 1, so that a
  finished beam keeps its score and its place instead of growing.

What stays unequal against our beam search (`keras_attention.decoding.beam_search`):

- `BeamSampler` has no length penalty: it returns the beam of the highest sum of
  log-probabilities, which favours short outputs (ours divides by `((5 + length) / 6) **
  alpha`);
- its finished hypotheses take beam slots (ours keeps `beam_size` live hypotheses beside
  `beam_size` finished ones), and it stops only when every beam of every sentence has ended,
  where ours stops a sentence once it has `beam_size` finished ones;
- an EOS forced at the length limit gets probability 1 (ours keeps its log-probability);
- it reorders all the caches of every step with `take_along_axis` over the whole
  `(batch, beams, ...)` tensors, as ours does with `take`.

Greedy search is the same search as ours (`greedy_search`): the tests check that both give
the same tokens.
"""

from keras import ops

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID

_NEG_INF = -1e9


def _restricted_logits(logits, last_token, generated, limits):
    """The logits of the next token with our searches' restrictions (see the module docstring).

    Args:
        logits: float32 `(rows, V)`.
        last_token: int `(rows,)`, the token fed to the decoder this step.
        generated: scalar int, how many tokens each row will have generated after this one.
        limits: int `(rows,)`, the most tokens a row may generate (EOS included).
    """
    ids = ops.arange(ops.shape(logits)[-1])[None, :]  # (1, V)
    finished = ops.logical_or(ops.equal(last_token, EOS_ID), ops.equal(last_token, PAD_ID))
    at_limit = ops.equal(generated, limits)
    only = ops.where(finished, PAD_ID, EOS_ID)[:, None]  # (rows, 1): the one token allowed
    forced = ops.logical_or(finished, at_limit)[:, None]
    banned = ops.logical_or(
        ops.logical_or(ops.equal(ids, PAD_ID), ops.equal(ids, BOS_ID)),
        ops.logical_and(forced, ops.not_equal(ids, only)),
    )  # (rows, V)
    only_choice = ops.logical_and(forced, ops.equal(ids, only))  # wins over the ban of PAD
    return ops.where(only_choice, 0.0, ops.where(banned, _NEG_INF, logits))


def sampler_search(model, source_ids, sampler, extra_length: int):
    """Decodes `source_ids` with a keras-hub sampler over `model`'s cached step.

    Args:
        model: a `Transformer`.
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        sampler: `keras_hub.samplers.GreedySampler()` or `BeamSampler(num_beams)` (with
            `return_all_beams=False`).
        extra_length: a sentence may generate up to `source length + extra_length` tokens
            (EOS included), as in our searches.

    Returns:
        int32 `(batch, L)`: the generated tokens without BOS, each row ending with EOS, then
        padding (the layout of `greedy_search` and `beam_search`).

    Example:

    >>> tokens = sampler_search(model, source_ids, keras_hub.samplers.BeamSampler(4), 50)
    """
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    beams = getattr(sampler, "num_beams", 1)
    batch = ops.shape(source_ids)[0]
    limits = ops.sum(ops.cast(ops.not_equal(source_ids, PAD_ID), "int32"), axis=1) + extra_length
    length = ops.max(limits)
    encoded, source_mask = model.encode(source_ids)
    cross = model.decoder.compute_cross_attention_cache(encoded)
    if beams > 1:  # the sampler repeats its prompt and cache the same way
        encoded, source_mask, limits = (
            ops.repeat(x, beams, axis=0) for x in (encoded, source_mask, limits)
        )
        cross = [ops.repeat(c, beams, axis=1) for c in cross]

    def next_logits(prompt, cache, index):
        step = index - 1
        token = ops.slice(prompt, [0, step], [ops.shape(prompt)[0], 1])  # (rows, 1)
        logits, cache = model.decode(
            token,
            encoded,
            source_mask,
            start_index=step,
            self_attention_cache=[ops.swapaxes(c, 0, 1) for c in cache],
            cross_attention_cache=cross,
        )
        rows_first = [ops.swapaxes(c, 0, 1) for c in cache]
        return _restricted_logits(logits[:, 0], token[:, 0], index, limits), None, rows_first

    prompt = ops.concatenate(
        [ops.full((batch, 1), BOS_ID, "int32"), ops.zeros((batch, length), "int32")], axis=1
    )  # (B, L + 1)
    mask = ops.broadcast_to(ops.arange(length + 1)[None, :] < 1, ops.shape(prompt))
    tokens = sampler(
        next_logits,
        prompt,
        cache=[ops.swapaxes(c, 0, 1) for c in model.decoder.initial_cache(batch, length)],
        index=1,
        mask=mask,
        stop_token_ids=[EOS_ID],
    )
    return ops.cast(tokens[:, 1:], "int32")


def keras_hub_sampler(beam_size: int):
    """`GreedySampler()` for `beam_size == 1`, else `BeamSampler(num_beams=beam_size)`."""
    import keras_hub  # imports tensorflow-text: only when a keras-hub search is asked for

    if beam_size == 1:
        return keras_hub.samplers.GreedySampler()
    return keras_hub.samplers.BeamSampler(num_beams=beam_size)
