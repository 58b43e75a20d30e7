"""Models composed from `keras_attention.layers`."""

from keras_attention.models.dtype_copy import copy_with_dtype
from keras_attention.models.presets import PRESETS, preset_config
from keras_attention.models.transformer import Transformer

__all__ = ["PRESETS", "Transformer", "copy_with_dtype", "preset_config"]
