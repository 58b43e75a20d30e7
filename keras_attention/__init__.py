"""keras_attention: the Transformer of "Attention Is All You Need" for Keras 3."""

from keras_attention import layers, masks
from keras_attention.layers import *  # noqa: F403 (the layers are re-exported at the top level)
from keras_attention.layers import __all__ as _layer_names

__version__ = "0.1.0"
__all__ = ["layers", "masks", *_layer_names]
