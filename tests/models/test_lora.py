"""`Transformer.enable_lora` and its files (`models.lora`): keras-hub's targets and names,
only the LoRA kernels train, the `.lora.h5` file holds them alone and loads back, and a
plain copy (what an export writes) has the merged kernels and the same outputs."""

import h5py
import keras
import numpy as np
import pytest

from keras_attention.core.file_checks import CorruptFileError
from keras_attention.models import Transformer, copy_with_dtype
from keras_attention.models.lora import DEFAULT_TARGET_NAMES, lora_layers
from tests.conftest import to_numpy
from tests.scripts.tiny_transformer import tiny_transformer
from tests.tolerances import assert_close

SOURCE = np.array([[5, 6, 7, 3], [8, 3, 0, 0]], dtype="int32")
TARGET_IN = np.array([[2, 9, 10], [2, 11, 0]], dtype="int32")


def base_model(seed: int = 0) -> Transformer:
    return tiny_transformer(30, seed=seed)


def randomize_lora(model: Transformer, seed: int) -> None:
    """Non-zero LoRA kernels, as training would leave them."""
    rng = np.random.default_rng(seed)
    for layer in lora_layers(model).values():
        for kernel in (layer.lora_kernel_a, layer.lora_kernel_b):
            kernel.assign(rng.normal(0, 0.3, kernel.shape).astype("float32"))


def test_enable_lora_adapts_query_and_value_and_leaves_only_their_kernels_trainable():
    model = base_model()
    before = to_numpy(model((SOURCE, TARGET_IN)))
    paths = model.enable_lora(4)
    # One self-attention in the encoder, a self- and a cross-attention in the decoder.
    assert len(paths) == 6 and {path.rsplit("/", 1)[1] for path in paths} == {"query", "value"}
    assert set(DEFAULT_TARGET_NAMES) == {"query", "value"}
    trainable = {weight.path for weight in model.trainable_weights}
    expected = {
        f"{layer.path}/{name}"
        for layer in lora_layers(model).values()
        for name in ("lora_kernel_a", "lora_kernel_b")
    }
    assert trainable == expected
    lora_size = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert lora_size == 6 * 4 * (16 + 16)
    # b starts at zero: the outputs do not change until it trains.
    np.testing.assert_array_equal(to_numpy(model((SOURCE, TARGET_IN))), before)


def test_training_with_lora_changes_only_the_lora_kernels():
    model = base_model()
    model.enable_lora(2, target_names=["query", "value", "inner"])
    frozen = {w.path: to_numpy(w) for w in model.weights if "lora" not in w.path}
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    targets = np.array([[9, 10, 3], [11, 3, 0]], dtype="int32")
    model.fit((SOURCE, TARGET_IN), targets, epochs=3, verbose=0)
    for weight in model.weights:
        if weight.path in frozen:
            np.testing.assert_array_equal(to_numpy(weight), frozen[weight.path], weight.path)
    b_kernels = [to_numpy(layer.lora_kernel_b) for layer in lora_layers(model).values()]
    assert any(np.abs(kernel).max() > 0 for kernel in b_kernels), "nothing was trained"


def test_the_lora_file_holds_only_lora_kernels_and_loads_into_another_instance(tmp_path):
    model = base_model()
    model.enable_lora(4)
    randomize_lora(model, 1)
    adapted = to_numpy(model((SOURCE, TARGET_IN)))
    path = tmp_path / "adapter.lora.h5"
    model.save_lora_weights(path)
    with h5py.File(path) as file:
        names = []

        def datasets(name: str, item) -> None:
            if isinstance(item, h5py.Dataset):
                names.append(name)

        file.visititems(datasets)
        assert file.attrs["rank"] == 4
    assert names and all(name.rsplit("/", 1)[1].startswith("lora_kernel_") for name in names)
    assert len(names) == 2 * len(lora_layers(model))

    other = base_model()  # the same base weights (the same seed), another instance
    other.enable_lora(4)
    assert not np.allclose(to_numpy(other((SOURCE, TARGET_IN))), adapted)
    other.load_lora_weights(path)
    np.testing.assert_array_equal(to_numpy(other((SOURCE, TARGET_IN))), adapted)


def test_a_plain_copy_merges_the_lora_kernels_and_gives_the_same_outputs():
    model = base_model()
    model.enable_lora(4)
    randomize_lora(model, 2)
    copy = copy_with_dtype(model, "float32")
    assert not lora_layers(copy)
    assert len(copy.weights) == len(base_model().weights)
    assert_close(copy((SOURCE, TARGET_IN)), model((SOURCE, TARGET_IN)))


def test_wrong_uses_are_refused_by_name(tmp_path):
    model = base_model()
    with pytest.raises(ValueError, match="no LoRA weights"):
        model.save_lora_weights(tmp_path / "a.lora.h5")
    with pytest.raises(ValueError, match="rank"):
        model.enable_lora(0)
    with pytest.raises(ValueError, match=r"names no Dense layer; its names: .*'query'"):
        model.enable_lora(2, target_names=["query_proj"])
    model.enable_lora(2)
    with pytest.raises(ValueError, match="already enabled"):
        model.enable_lora(2)
    with pytest.raises(ValueError, match=r"must end with \.lora\.h5"):
        model.save_lora_weights(tmp_path / "a.h5")
    model.save_lora_weights(tmp_path / "rank2.lora.h5")
    wider = base_model()
    wider.enable_lora(4)
    with pytest.raises(ValueError, match="another rank or model size"):
        wider.load_lora_weights(tmp_path / "rank2.lora.h5")
    fewer = base_model()
    fewer.enable_lora(2, target_names=["query"])
    with pytest.raises(ValueError, match="does not fit the model's LoRA layers"):
        fewer.load_lora_weights(tmp_path / "rank2.lora.h5")
    (tmp_path / "broken.lora.h5").write_bytes(b"not hdf5")
    with pytest.raises(CorruptFileError, match=r"broken\.lora\.h5"):
        fewer.load_lora_weights(tmp_path / "broken.lora.h5")
    with pytest.raises(FileNotFoundError, match=r"missing\.lora\.h5"):
        fewer.load_lora_weights(tmp_path / "missing.lora.h5")
