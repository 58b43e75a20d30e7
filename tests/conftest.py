"""Test set-up: TensorFlow by default; `KERAS_BACKEND=torch` or `jax` runs the backend-agnostic
tests (see `tools/run_tests.sh`) on that backend."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Every test starts with the float32 policy and a fixed seed.

    (`keras.backend.clear_session()` is not called: it costs about 0.5 s a test.)
    """
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def to_numpy(x) -> np.ndarray:
    """Any backend tensor as a NumPy array."""
    return keras.ops.convert_to_numpy(x)
