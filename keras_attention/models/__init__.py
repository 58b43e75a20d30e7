"""Models composed from `keras_attention.layers`.

Its names are imported with it: `import keras_attention` imports the package anyway (the
`Transformer` registers with Keras), and none of its modules loads TensorFlow under another
backend.
"""

from keras_attention.models.dtype_copy import copy_with_dtype
from keras_attention.models.preset_folder import save_to_preset
from keras_attention.models.presets import PRESETS, preset_config
from keras_attention.models.transformer import Transformer

__all__ = ["PRESETS", "Transformer", "copy_with_dtype", "preset_config", "save_to_preset"]
