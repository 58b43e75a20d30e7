"""The tiny Transformer that the subprocess scripts of the distribution tests train."""

from keras_attention.models import Transformer


def tiny_transformer(vocabulary_size: int) -> Transformer:
    """One encoder and one decoder layer of width 16, no dropout, built."""
    model = Transformer(
        vocabulary_size,
        num_encoder_layers=1,
        num_decoder_layers=1,
        d_model=16,
        num_heads=2,
        intermediate_dim=32,
        dropout=0.0,
    )
    model.build()
    return model
