"""keras_attention: the Transformer of "Attention Is All You Need" for Keras 3.

Importing the package registers every layer, model, loss, metric and schedule with Keras, so
that `keras.models.load_model` can read `.keras` files that use them.
"""

from keras_attention import layers, masks, models, training
from keras_attention.layers import *  # noqa: F403 (the layers are re-exported at the top level)
from keras_attention.layers import __all__ as _layer_names
from keras_attention.models import Transformer

__version__ = "0.1.0"
__all__ = ["Transformer", "layers", "masks", "models", "training", *_layer_names]
