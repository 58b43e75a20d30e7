"""Pieces that keras-hub also provides: ours give the same numbers, and why we keep ours.

keras-hub's `Perplexity` and `SinePositionEncoding` compute what ours compute (checked here),
but `import keras_hub` loads TensorFlow and tensorflow-text whatever the Keras backend
(checked here too), while the layers and the training metrics must stay backend-agnostic:
they run under JAX and PyTorch in CI, where loading TensorFlow as well would cost seconds
and gigabytes for nothing. So the layers and metrics keep their own few lines.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

keras_hub = pytest.importorskip("keras_hub")

from keras_attention.layers import SinusoidalPositionalEncoding  # noqa: E402
from keras_attention.training import Perplexity  # noqa: E402
from tests.conftest import to_numpy  # noqa: E402
from tests.tolerances import assert_close  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def padded_batches(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Two batches of targets with different amounts of padding (id 0) and random logits."""
    rng = np.random.default_rng(seed)
    batches = []
    for batch, length, real in [(2, 6, [6, 1]), (3, 4, [4, 2, 3])]:
        targets = rng.integers(1, 7, (batch, length))
        for row, count in enumerate(real):
            targets[row, count:] = 0
        batches.append((targets, rng.normal(size=(batch, length, 7)) * 2))
    return batches


def reference_perplexity(batches) -> float:
    """`exp` of the mean cross-entropy over every real token of every batch, in float64."""
    total = count = 0.0
    for targets, logits in batches:
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        real = targets != 0
        picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
        total -= (picked * real).sum()
        count += real.sum()
    return float(np.exp(total / count))


def test_perplexity_equals_keras_hubs():
    ours = Perplexity(pad_id=0)
    theirs = keras_hub.metrics.Perplexity(from_logits=True, mask_token_id=0)
    batches = padded_batches()
    for targets, logits in batches:
        ours.update_state(targets, logits.astype("float32"))
        theirs.update_state(targets, logits.astype("float32"))
    want = reference_perplexity(batches)
    np.testing.assert_allclose(float(to_numpy(ours.result())), want, rtol=1e-5)
    np.testing.assert_allclose(float(to_numpy(theirs.result())), want, rtol=1e-5)


def test_positional_encoding_equals_keras_hubs():
    inputs = np.zeros((2, 11, 16), "float32")
    ours = to_numpy(SinusoidalPositionalEncoding()(inputs))
    theirs = to_numpy(keras_hub.layers.SinePositionEncoding()(inputs))
    assert_close(np.broadcast_to(ours, theirs.shape), theirs)


def loaded_backends(statement: str) -> dict:
    """Which of tensorflow / tensorflow_text a fresh process on PyTorch has loaded after
    running `statement`."""
    code = (
        f"import sys\n{statement}\nimport json\n"
        "print(json.dumps({name: name in sys.modules for name in "
        "('tensorflow', 'tensorflow_text')}))"
    )
    env = {**os.environ, "KERAS_BACKEND": "torch", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keras_hub_loads_tensorflow_under_another_backend_and_ours_does_not():
    assert loaded_backends("import keras_hub") == {"tensorflow": True, "tensorflow_text": True}
    ours = "import keras_attention.layers, keras_attention.training.metrics"
    assert loaded_backends(ours) == {"tensorflow": False, "tensorflow_text": False}
