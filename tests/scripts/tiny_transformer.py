"""The tiny Transformer that the subprocess scripts of the distribution tests train, and that
the decoding and LoRA tests decode with."""

import keras

from keras_attention.models import Transformer


def tiny_transformer(
    vocabulary_size: int,
    num_decoder_layers: int = 1,
    seed: int | None = None,
    scale: float | None = None,
) -> Transformer:
    """One encoder and `num_decoder_layers` decoder layers of width 16, no dropout, built;
    with `seed`, initialised from it, and with `scale` too, its weights redrawn at that
    scale (`tests.layers.numpy_reference.randomize_weights`: peaked distributions)."""
    if seed is not None:
        keras.utils.set_random_seed(seed)
    model = Transformer(
        vocabulary_size,
        num_encoder_layers=1,
        num_decoder_layers=num_decoder_layers,
        d_model=16,
        num_heads=2,
        intermediate_dim=32,
        dropout=0.0,
    )
    model.build()
    if scale is not None:
        from tests.layers.numpy_reference import randomize_weights

        randomize_weights(model, seed=seed, scale=scale)
    return model
