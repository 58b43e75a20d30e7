"""Weights files built in memory: they load back as `save_weights`'s do, and a write that fails
half-way (a full disk, here a file size limit) is an `OSError` naming the file, with the old
file kept, not a crash of the process."""

import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np

from keras_attention.core.weights_file import save_weights_atomically, weights_bytes


def small_model(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(64), keras.layers.Dense(3)])


def test_the_file_loads_back_into_a_model(tmp_path: Path):
    model = small_model(0)
    path = save_weights_atomically(model, tmp_path / "a.weights.h5")
    reloaded = small_model(1)
    reloaded.load_weights(path)
    for saved, loaded in zip(model.get_weights(), reloaded.get_weights(), strict=True):
        np.testing.assert_array_equal(saved, loaded)
    assert path.read_bytes() == weights_bytes(model)
    assert [p.name for p in tmp_path.iterdir()] == ["a.weights.h5"]  # no temporary file left


def test_a_write_that_fails_half_way_names_the_file_and_keeps_the_old_one(tmp_path: Path):
    path = tmp_path / "b.weights.h5"
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        import keras
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_weights_file import small_model
        from keras_attention.core.weights_file import save_weights_atomically

        path = {str(path)!r}
        save_weights_atomically(small_model(0), path)
        old = open(path, "rb").read()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(old) // 2, resource.RLIM_INFINITY))
        try:
            save_weights_atomically(small_model(1), path)
        except OSError as error:
            print("ERROR", error.errno, error.filename)
        print("KEPT", open(path, "rb").read() == old)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]  # no crash (h5py's was signal 11)
    assert f"ERROR 27 {path}" in done.stdout
    assert "KEPT True" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.weights.h5"]
