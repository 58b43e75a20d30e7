"""Weights saved with the old `EinsumDense` projections load into the `Dense` ones.

The files in `tests/data_files/old_format/` were written by the code before the change
(`make_files.py` there): a tiny Transformer as `.keras` and `.weights.h5`, and its logits.
"""

import sys
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest

from keras_attention.layers.legacy_weights import ProjectionDense, legacy_layout, legacy_value
from keras_attention.models import Transformer
from keras_attention.runs.files import load_model_file
from keras_attention.training.checkpoints import check_layouts, load_weights_file
from tests.conftest import to_numpy
from tests.tolerances import assert_close

OLD = Path(__file__).parents[1] / "data_files" / "old_format"
QUERY_KERNEL = "encoder/blocks/transformer_encoder_block/self_attention/query_dense/vars/0"


def old_config() -> dict:
    sys.path.insert(0, str(OLD))
    try:
        from make_files import CONFIG
    finally:
        sys.path.remove(str(OLD))
    return CONFIG


@pytest.fixture(scope="module")
def recorded():
    return np.load(OLD / "tiny_outputs.npz")


def logits(model: keras.Model, recorded) -> np.ndarray:
    return to_numpy(model((recorded["source"], recorded["target"]), training=False))


def test_the_files_hold_the_old_layout():
    with h5py.File(OLD / "tiny.weights.h5", "r") as file:
        assert file[QUERY_KERNEL].shape == (16, 2, 8)  # (d_model, heads, head_dim)


@pytest.mark.parametrize("loader", [load_model_file, keras.models.load_model])
def test_an_old_keras_file_loads_with_the_same_outputs(recorded, loader):
    model = loader(OLD / "tiny.keras")
    attention = model.encoder.blocks[0].self_attention
    assert isinstance(attention.query_dense, ProjectionDense)
    assert tuple(attention.query_dense.kernel.shape) == (16, 16)
    assert_close(logits(model, recorded), recorded["logits"])


def test_an_old_compiled_keras_file_loads_with_its_optimizer_state():
    """A run's `model.keras` holds Adam's moments in the old kernels' shapes too."""
    model = load_model_file(OLD / "tiny_compiled.keras")
    recorded = np.load(OLD / "tiny_outputs.npz")
    expected = np.load(OLD / "tiny_compiled_outputs.npz")["logits"]
    assert_close(logits(model, recorded), expected)
    assert int(to_numpy(model.optimizer.iterations)) == 1
    kernel = model.encoder.blocks[0].self_attention.query_dense.kernel
    moments = [v for v in model.optimizer.variables if tuple(v.shape) == (16, 16)]
    assert moments and all(np.abs(to_numpy(v)).max() > 0 for v in moments)
    assert tuple(kernel.shape) == (16, 16)


def test_an_old_checkpoint_with_optimizer_state_loads_into_a_compiled_model():
    """As when a run resumes from an epoch checkpoint written by the old code."""
    model = Transformer(**old_config())
    model.build()
    model.compile(optimizer="adam", loss="mse")
    model.optimizer.build(model.trainable_variables)
    model.load_weights(OLD / "tiny_compiled.weights.h5")
    assert int(to_numpy(model.optimizer.iterations)) == 1
    moments = [v for v in model.optimizer.variables if tuple(v.shape) == (16, 16)]
    assert moments and all(np.abs(to_numpy(v)).max() > 0 for v in moments)
    expected = np.load(OLD / "tiny_compiled_outputs.npz")["logits"]
    got = logits(model, np.load(OLD / "tiny_outputs.npz"))
    assert_close(got, expected)


def test_an_old_weights_file_passes_the_layout_check_and_loads(recorded):
    model = Transformer(**old_config())
    model.build()
    check_layouts(model, [OLD / "tiny.weights.h5"])
    load_weights_file(model, OLD / "tiny.weights.h5")
    assert_close(logits(model, recorded), recorded["logits"])
    with h5py.File(OLD / "tiny.weights.h5", "r") as file:
        old_kernel = file[QUERY_KERNEL][()]
    kernel = to_numpy(model.encoder.blocks[0].self_attention.query_dense.kernel)
    np.testing.assert_array_equal(kernel, old_kernel.reshape(16, 16))


def test_a_new_weights_file_still_loads(tmp_path, recorded):
    model = load_model_file(OLD / "tiny.keras")
    model.save_weights(tmp_path / "new.weights.h5")
    fresh = Transformer(**old_config())
    fresh.build()
    check_layouts(fresh, [tmp_path / "new.weights.h5"])
    load_weights_file(fresh, tmp_path / "new.weights.h5")
    assert_close(logits(fresh, recorded), recorded["logits"])


def test_legacy_value_refuses_another_number_of_elements():
    with pytest.raises(ValueError, match=r"query_dense/kernel.*\(16, 3, 8\)"):
        legacy_value(np.zeros((16, 3, 8)), (16, 16), "query_dense/kernel")


def test_legacy_layout_maps_only_projection_weights_of_the_same_size():
    query, norm, key = "a/query_dense/vars/0", "a/norm/vars/0", "a/key_dense/vars/0"
    expected = {query: (16, 16), norm: (16,), key: (16, 16)}
    found = {query: (16, 2, 8), norm: (4, 4), key: (16, 3, 8)}
    assert legacy_layout(found, expected) == {query: (16, 16), norm: (4, 4), key: (16, 3, 8)}
