"""A copy of a Transformer that computes in another dtype, with the same weights."""

import keras

from keras_attention.models.transformer import Transformer


def copy_with_dtype(model: Transformer, dtype: str = "float32") -> Transformer:
    """A built copy of `model` holding the same weights, with the dtype policy `dtype`.

    A model trained under a mixed-precision policy (`"mixed_bfloat16"`, `"mixed_float16"`)
    keeps float32 variables but computes in bfloat16 or float16; its float32 copy decodes
    with the same weights at full precision (on CPUs without fast bfloat16 matmuls, also
    faster: see `export_translator`).

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
    copy.set_weights(model.get_weights())
    return copy
