"""Symbolic output specs for layers whose extra outputs (scores, caches) are optional."""

import keras

# Call arguments that add outputs (attention scores, updated caches) when set.
EXTRA_OUTPUT_ARGUMENTS = ("return_attention_scores", "cache", "self_attention_cache")


def output_spec(layer: keras.layers.Layer, main_shape: tuple, args: tuple, kwargs: dict):
    """The `KerasTensor` of `main_shape`, or a traced spec when extra outputs are asked for.

    Args:
        layer: the layer whose `call` is described.
        main_shape: the shape of the main output.
        args: the positional call arguments (symbolic tensors).
        kwargs: the keyword call arguments.

    Returns:
        A `KerasTensor`, or the nested structure of `KerasTensor`s that `call` returns.
    """
    if any(
        kwargs.get(name) is not None and kwargs.get(name) is not False
        for name in EXTRA_OUTPUT_ARGUMENTS
    ):
        return keras.Operation.compute_output_spec(layer, *args, **kwargs)
    return keras.KerasTensor(main_shape, dtype=layer.compute_dtype)
