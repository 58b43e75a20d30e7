"""The Transformer's layers as ordinary Keras 3 layers, for any backend.

Importing them loads keras, numpy and `keras_attention.core`/`keras_attention.distribute`
modules that do the same (`tests/test_imports.py` follows the imports to the end); under the
TensorFlow backend, `ReplicaDropout` asks `tf.distribute` for the replica context when called.
"""

from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.positional_embedding import PositionalEmbedding
from keras_attention.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_attention.layers.replica_dropout import ReplicaDropout
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
    "MultiHeadAttention",
    "PositionalEmbedding",
    "PositionwiseFeedForward",
    "ReplicaDropout",
    "ScaledDotProductAttention",
    "SinusoidalPositionalEncoding",
    "TransformerDecoder",
    "TransformerDecoderBlock",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "masked_softmax",
    "scaled_dot_product_attention",
]
