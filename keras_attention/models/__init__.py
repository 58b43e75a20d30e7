"""Models composed from `keras_attention.layers`.

Its names load on first use (`core.lazy_names`).
"""

from keras_attention.core.lazy_names import lazy_names

__getattr__, __dir__, __all__ = lazy_names(
    __name__,
    dtype_copy=["copy_with_dtype"],
    preset_folder=["save_to_preset"],
    presets=["PRESETS", "preset_config"],
    transformer=["Transformer"],
)
