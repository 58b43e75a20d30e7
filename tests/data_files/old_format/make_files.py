"""How the files in this folder were made, with the code before the projections became
`Dense` layers (commit 43232cd, `EinsumDense` kernels `(d, heads, head_dim)`).

Run from the repository root at that commit: `python tests/data_files/old_format/make_files.py`.
Run at a later commit it would write the new format, so the files are checked in instead.
"""

from pathlib import Path

import keras
import numpy as np

from keras_attention.models import Transformer

CONFIG = {
    "vocabulary_size": 40,
    "num_encoder_layers": 1,
    "num_decoder_layers": 1,
    "d_model": 16,
    "num_heads": 2,
    "intermediate_dim": 24,
}


def main() -> None:
    folder = Path(__file__).parent
    keras.utils.set_random_seed(36)
    model = Transformer(**CONFIG)
    rng = np.random.default_rng(36)
    source = rng.integers(3, CONFIG["vocabulary_size"], size=(2, 7)).astype("int32")
    source[1, 5:] = 0  # padding
    target = rng.integers(3, CONFIG["vocabulary_size"], size=(2, 5)).astype("int32")
    logits = keras.ops.convert_to_numpy(model((source, target), training=False))
    model.save(folder / "tiny.keras")
    model.save_weights(folder / "tiny.weights.h5")
    np.savez(folder / "tiny_outputs.npz", source=source, target=target, logits=logits)
    compiled_model_file(folder, model, source, target)


def compiled_model_file(folder: Path, model: Transformer, source, target) -> None:
    """`tiny_compiled.keras`: the model after one Adam step (the optimizer's moments are
    saved too, in the kernels' shapes, as in a run's `model.keras`), and its logits."""
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.fit((source, target), target, epochs=1, verbose=0)
    logits = keras.ops.convert_to_numpy(model((source, target), training=False))
    model.save(folder / "tiny_compiled.keras")
    model.save_weights(folder / "tiny_compiled.weights.h5")  # with the optimizer's state
    np.savez(folder / "tiny_compiled_outputs.npz", logits=logits)


if __name__ == "__main__":
    main()
