"""Sinusoidal positional encoding (Section 3.5)."""

import keras
from keras import ops

from keras_attention.core.checks import check_positive_float


@keras.saving.register_keras_serializable(package="keras_attention")
class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Sinusoidal positional encoding, Section 3.5.

    `PE(pos, 2i) = sin(pos / max_wavelength^(2i / d_model))` and
    `PE(pos, 2i + 1) = cos(pos / max_wavelength^(2i / d_model))`: sines on the even
    features and cosines on the odd ones, interleaved exactly as in the paper. It has no
    weights and returns the encoding (not the sum), so that callers add it themselves.

    keras-hub's `SinePositionEncoding` gives the same numbers
    (`tests/system/test_keras_hub_parity.py`); this one stays because `import keras_hub`
    loads TensorFlow and tensorflow-text under any backend, and the layers must load only
    keras and numpy.

    Args:
        max_wavelength: the base of the geometric progression of wavelengths (10000 in
            the paper).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`; only its shape is used.
        start_index: position of the first element (int or scalar tensor), e.g. the
            current step when decoding one position at a time.

    Returns:
        The encoding, broadcast to the shape of `inputs`, in the layer's compute dtype;
        the Keras mask of `inputs` is passed on.

    Example:

    >>> x = np.zeros((2, 10, 16), "float32")
    >>> keras.ops.shape(SinusoidalPositionalEncoding()(x))
    (2, 10, 16)
    """

    def __init__(self, max_wavelength: float = 10000.0, **kwargs):
        super().__init__(**kwargs)
        check_positive_float("max_wavelength", max_wavelength)
        self.max_wavelength = max_wavelength
        self.supports_masking = True  # per-position output: the input's Keras mask still applies
        self.built = True

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        seq_len, d_model = shape[-2], shape[-1]
        positions = ops.arange(seq_len, dtype="float32") + ops.cast(start_index, "float32")
        features = ops.arange(d_model, dtype="int32")
        even = ops.cast(2 * (features // 2), "float32")  # 2i for both 2i and 2i + 1
        inverse_wavelengths = ops.power(
            ops.cast(self.max_wavelength, "float32"), -even / ops.cast(d_model, "float32")
        )  # (D,)
        angles = positions[:, None] * inverse_wavelengths[None, :]  # (T, D)
        encoding = ops.where(features % 2 == 0, ops.sin(angles), ops.cos(angles))  # (T, D)
        return ops.broadcast_to(ops.cast(encoding, self.compute_dtype), shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config
