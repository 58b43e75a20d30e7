"""A copy of a Transformer that computes in another dtype, with the same weights."""

import keras

from keras_attention.core.weights_file import load_weights_bytes, weights_bytes
from keras_attention.models.transformer import Transformer


def copy_with_dtype(model: Transformer, dtype: str = "float32") -> Transformer:
    """A built copy of `model` holding the same weights, with the dtype policy `dtype`.

    A model trained under a mixed-precision policy (`"mixed_bfloat16"`, `"mixed_float16"`)
    keeps float32 variables but computes in bfloat16 or float16; its float32 copy decodes
    with the same weights at full precision (on CPUs without fast bfloat16 matmuls, also
    faster: see `export_translator`). The copy is a plain model: a LoRA model's copy has
    the merged kernels and no LoRA layers (the weights go through a `.weights.h5` file in
    memory, which Keras writes with LoRA merged), which is what an export writes.

    Args:
        model: a built `Transformer`.
        dtype: a Keras dtype policy name, e.g. `"float32"`.

    Returns:
        A new `Transformer`; `model` is unchanged.

    Example:

    >>> keras.config.set_dtype_policy("mixed_bfloat16")
    >>> model = Transformer.from_preset("tiny", vocabulary_size=100)
    >>> model.build()
    >>> keras.config.set_dtype_policy("float32")
    >>> copy_with_dtype(model).compute_dtype
    'float32'
    """
    if not model.built:
        raise ValueError("copy_with_dtype needs a built model; call model.build() first")
    config = model.get_config()
    config["dtype"] = keras.DTypePolicy(dtype)
    copy = type(model).from_config(config)
    copy.build()
    load_weights_bytes(copy, weights_bytes(model))
    return copy
