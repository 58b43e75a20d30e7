"""keras_attention: the Transformer of "Attention Is All You Need" for Keras 3.

Importing the package registers every layer, model, loss, metric and schedule with Keras, so
that `keras.models.load_model` can read `.keras` files that use them. With
`KERAS_ATTENTION_QUIET=1` (the command-line tools set it), Keras and TensorFlow are imported
without TensorFlow's start-up lines (`keras_attention.core.quiet_import`).
"""

from keras_attention.core.quiet_import import import_keras_quietly

import_keras_quietly()

# The imports below come after the quiet import on purpose.
from keras_attention import layers, masks, models, training  # noqa: E402
from keras_attention.layers import *  # noqa: E402, F403 (the layers, at the top level)
from keras_attention.layers import __all__ as _layer_names  # noqa: E402
from keras_attention.models import Transformer  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Transformer", "layers", "masks", "models", "training", *_layer_names]
