"""keras_attention: the Transformer of "Attention Is All You Need" for Keras 3.

Importing the package imports Keras and registers every layer, model, loss, metric and
schedule with Keras, so that `keras.models.load_model` can read `.keras` files that use them;
it does the same whatever the environment. With `KERAS_ATTENTION_QUIET=1` (which the
command-line tools set once their arguments parse), Keras and TensorFlow are imported without
TensorFlow's start-up lines (`keras_attention.core.quiet_import`): an output setting only.
Without it, `TF_CPP_MIN_LOG_LEVEL` defaults to 1 if unset before TensorFlow loads, which hides
TensorFlow's C++ INFO lines and nothing else (docs/index.md: what hides the rest).

The command-line tools parse their arguments with `keras_attention_cli`, which imports none of
this package, and import the package afterwards: so their `--help` and argument errors come
at once, not after TensorFlow's few seconds of start-up.
"""

from keras_attention.core.quiet_import import import_keras_quietly

import_keras_quietly()

# The modules that register classes with Keras: importing them is the registration.
from keras_attention import layers, masks, models, training  # noqa: E402
from keras_attention.distribute import replica_dropout  # noqa: E402, F401 (old files' layer)
from keras_attention.layers import *  # noqa: E402, F403
from keras_attention.models.transformer import Transformer  # noqa: E402
from keras_attention.version import __version__  # noqa: E402, F401 (keras_attention.__version__)

__all__ = ["Transformer", "layers", "masks", "models", "training", *layers.__all__]
