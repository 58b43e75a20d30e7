"""Test set-up: TensorFlow is the default backend; `KERAS_BACKEND=torch` runs the layer tests on torch."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Every test starts with float32, a fixed seed and no leftover layer names."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()


def to_numpy(x) -> np.ndarray:
    """Any backend tensor as a NumPy array."""
    return keras.ops.convert_to_numpy(x)
