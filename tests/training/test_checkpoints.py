"""Checkpoint averaging: picking the last N epoch files, and the exact element-wise mean."""

import re
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention.models import Transformer
from keras_attention.training.checkpoints import (
    average_checkpoints,
    last_checkpoints,
    load_weights_file,
)
from tests.models.test_transformer import SIZE, VOCABULARY_SIZE


def tiny_transformer(**overrides: int | bool) -> Transformer:
    model = Transformer(**{"vocabulary_size": VOCABULARY_SIZE, **SIZE, **overrides})
    model.build()
    return model


def touch(folder: Path, names: list[str]) -> None:
    for name in names:
        (folder / name).write_bytes(b"")


def save_random_checkpoints(model: Transformer, folder: Path, count: int) -> list[list]:
    """Saves `count` checkpoints `epoch_001...` of random weights; returns those weights."""
    rng = np.random.default_rng(7)
    saved = []
    for epoch in range(1, count + 1):
        weights = [rng.normal(0.0, 0.5, w.shape).astype(w.dtype) for w in model.get_weights()]
        model.set_weights(weights)
        model.save_weights(folder / f"epoch_{epoch:03d}.weights.h5")
        saved.append(weights)
    return saved


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (1, ["epoch_1000"]),
        (2, ["epoch_999", "epoch_1000"]),
        (4, ["epoch_010", "epoch_998", "epoch_999", "epoch_1000"]),
        (6, ["epoch_002", "epoch_009", "epoch_010", "epoch_998", "epoch_999", "epoch_1000"]),
    ],
)
def test_last_checkpoints_go_by_epoch_number_oldest_first(
    tmp_path: Path, count: int, expected: list[str]
):
    touch(tmp_path, [f"{name}.weights.h5" for name in
                     ("epoch_999", "epoch_010", "epoch_1000", "epoch_002", "epoch_009",
                      "epoch_998")])  # fmt: skip
    # Not checkpoints: an unfinished write, other names, another suffix.
    touch(tmp_path, ["epoch_2000.weights.h5.tmp", "epoch_x.weights.h5", "best.weights.h5",
                     "epoch_3000.keras", "model.weights.h5"])  # fmt: skip
    paths = last_checkpoints(tmp_path, count)
    assert paths == [tmp_path / f"{name}.weights.h5" for name in expected]


@pytest.mark.parametrize("count", [0, -2])
def test_last_checkpoints_rejects_a_count_below_one(tmp_path: Path, count: int):
    touch(tmp_path, ["epoch_001.weights.h5"])
    with pytest.raises(ValueError, match=f"count must be >= 1; got count={count}"):
        last_checkpoints(tmp_path, count)


def test_last_checkpoints_names_the_folder_holding_too_few(tmp_path: Path):
    touch(tmp_path, ["epoch_001.weights.h5", "epoch_002.weights.h5"])
    with pytest.raises(ValueError, match="last 3 checkpoints") as error:
        last_checkpoints(tmp_path, 3)
    assert f"{tmp_path} holds 2" in str(error.value)


def test_last_checkpoints_names_a_missing_folder(tmp_path: Path):
    with pytest.raises(FileNotFoundError) as error:
        last_checkpoints(tmp_path / "missing", 1)
    assert str(tmp_path / "missing") in str(error.value)


def test_average_is_the_exact_mean(tmp_path: Path):
    saved = save_random_checkpoints(tiny_transformer(), tmp_path, 3)
    model = tiny_transformer()  # other initial weights: they must not count
    assert average_checkpoints(model, last_checkpoints(tmp_path, 3)) is model
    averaged = model.get_weights()
    assert len(averaged) == len(saved[0])
    for index, weight in enumerate(averaged):
        stack = np.stack([np.asarray(weights[index], np.float64) for weights in saved])
        expected = stack.mean(axis=0).astype(np.float32)
        assert weight.dtype == np.float32
        np.testing.assert_allclose(weight, expected, rtol=1e-7, atol=1e-7)
        assert not np.allclose(weight, saved[-1][index])  # not merely the last checkpoint


def test_average_of_one_checkpoint_is_that_checkpoint(tmp_path: Path):
    (saved,) = save_random_checkpoints(tiny_transformer(), tmp_path, 1)
    model = average_checkpoints(tiny_transformer(), [tmp_path / "epoch_001.weights.h5"])
    for weight, expected in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(weight, expected)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(
            num_encoder_layers=SIZE["num_encoder_layers"] + 1
        ),  # load_weights alone would ignore the extra block
        dict(share_embeddings=False),  # ... and the extra embedding
        dict(d_model=2 * SIZE["d_model"]),
        dict(vocabulary_size=VOCABULARY_SIZE + 2),
    ],
)
def test_a_checkpoint_of_another_architecture_is_rejected(tmp_path: Path, overrides: dict):
    save_random_checkpoints(tiny_transformer(), tmp_path, 1)
    foreign = tmp_path / "foreign" / "epoch_002.weights.h5"
    foreign.parent.mkdir()
    tiny_transformer(**overrides).save_weights(foreign)
    with pytest.raises(ValueError, match="does not match the model's architecture") as error:
        average_checkpoints(tiny_transformer(), [tmp_path / "epoch_001.weights.h5", foreign])
    assert str(foreign) in str(error.value)


def test_average_needs_existing_checkpoints(tmp_path: Path):
    with pytest.raises(ValueError, match="at least one checkpoint"):
        average_checkpoints(tiny_transformer(), [])
    with pytest.raises(FileNotFoundError, match="epoch_404"):
        average_checkpoints(tiny_transformer(), [tmp_path / "epoch_404.weights.h5"])


def test_a_truncated_checkpoint_is_named_corrupt(tmp_path: Path):
    save_random_checkpoints(tiny_transformer(), tmp_path, 2)
    path = tmp_path / "epoch_002.weights.h5"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # as if still being written
    with pytest.raises(ValueError, match="corrupt") as error:
        average_checkpoints(tiny_transformer(), last_checkpoints(tmp_path, 2))
    assert str(path) in str(error.value)


def test_load_weights_file_names_a_corrupt_file(tmp_path: Path):
    path = tmp_path / "epoch_001.weights.h5"
    path.write_bytes(b"not an HDF5 file")
    with pytest.raises(ValueError, match=f"{re.escape(str(path))} is corrupt"):
        load_weights_file(tiny_transformer(), path)


def test_epoch_checkpoints_keep_only_the_last_n(tmp_path):
    from keras_attention.training.callbacks import EpochCheckpoint

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    callback = EpochCheckpoint(tmp_path, keep=2)
    callback.set_model(model)
    for epoch in range(4):
        callback.on_epoch_end(epoch)
        names = sorted(path.name for path in tmp_path.iterdir())
        first = max(1, epoch)  # epochs (1-based) epoch .. epoch + 1 stay
        assert names == [f"epoch_{n:03d}.weights.h5" for n in range(first, epoch + 2)]
    everything = EpochCheckpoint(tmp_path / "all")
    everything.set_model(model)
    for epoch in range(3):
        everything.on_epoch_end(epoch)
    assert len(list((tmp_path / "all").iterdir())) == 3
    with pytest.raises(ValueError, match="keep"):
        EpochCheckpoint(tmp_path, keep=0)
