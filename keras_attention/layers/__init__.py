"""The Transformer's layers as ordinary Keras 3 layers, for any backend.

Importing them loads keras, numpy and `keras_attention.core` modules that do the same, and
nothing of `keras_attention.distribute` (`tests/system/test_imports.py` follows the imports to the
end). Their dropout is Keras's; `keras_attention.distribute.enable_replica_dropout` gives each
replica of a strategy its own masks, where a run trains on several.
"""

from keras_attention.layers.learned_positional_encoding import LearnedPositionalEncoding
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.positional_embedding import PositionalEmbedding
from keras_attention.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_attention.layers.scaled_dot_product_attention import (
    ScaledDotProductAttention,
    masked_softmax,
    scaled_dot_product_attention,
)
from keras_attention.layers.sinusoidal_positional_encoding import SinusoidalPositionalEncoding
from keras_attention.layers.transformer_decoder import TransformerDecoder
from keras_attention.layers.transformer_decoder_block import TransformerDecoderBlock
from keras_attention.layers.transformer_encoder import TransformerEncoder
from keras_attention.layers.transformer_encoder_block import TransformerEncoderBlock

__all__ = [
    "LearnedPositionalEncoding",
    "MultiHeadAttention",
    "PositionalEmbedding",
    "PositionwiseFeedForward",
    "ScaledDotProductAttention",
    "SinusoidalPositionalEncoding",
    "TransformerDecoder",
    "TransformerDecoderBlock",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "masked_softmax",
    "scaled_dot_product_attention",
]
