"""The set-up of the docstring examples, which `tools/run_tests.sh` runs as doctests
(`pytest --doctest-modules keras_attention`; the option flags are in setup.cfg).

Each example runs in an empty temporary folder of its own, as its working directory, so that
the files it writes land there. Besides its module's names it sees `np` (NumPy) and `keras`,
with the float32 policy and a fixed seed, as the tests do (`tests/conftest.py`).

An example that names `runs/translator` finds there a finished run of `tools/train.py`: a
tiny model (one layer a side, `d_model=16`) trained for one epoch on 300 generated pairs,
trained once a session (about 10 s) and copied into the example's folder. It translates
badly, so the examples show its translations as `...`. An example that names `train_data`
finds that run too, and `train_data` and `val_data`: `model.fit` batches of 64 and 16 other
generated pairs, encoded with the run's tokenizer (`make_batches`).

The tests of `tests/` load this file too: the fixture does nothing for them.
"""

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RUN = "runs/translator"


@pytest.fixture(scope="session")
def _trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder, trained as `tools/train.py` trains (tiny sizes)."""
    from keras_attention.data.generated_corpus import write_corpus
    from keras_attention.runs.config import TrainConfig
    from keras_attention.runs.train import train_translator

    root = tmp_path_factory.mktemp("doctest_run")
    files = write_corpus(root / "corpus", num_train=300, num_val=10, num_test=10)
    tiny = dict(num_encoder_layers=1, num_decoder_layers=1, d_model=16, num_heads=2)
    config = TrainConfig(
        output_dir=str(root / RUN),
        train=[[str(path) for path in files["train"]]],
        valid=[str(path) for path in files["val"]],
        test=[str(path) for path in files["test"]],
        preset="tiny",
        model_overrides={**tiny, "intermediate_dim": 32},
        vocabulary_size=120,
        epochs=1,
        max_tokens=512,
        max_length=64,
        warmup_steps=20,
        jit_compile=False,
        validation_bleu_every=0,
        average=[],
        beam_size=2,
    )
    train_translator(config)
    return root / RUN


@pytest.fixture(scope="session")
def _batches(_trained_run: Path) -> dict:
    """`train_data` and `val_data` for the run's model."""
    from keras_attention.data.generated_corpus import generated_splits
    from keras_attention.data.pipeline import encode_pairs, make_batches
    from keras_attention.models.run_folder import load_run_tokenizer

    tokenizer = load_run_tokenizer(_trained_run)
    splits = generated_splits(num_train=64, num_val=16, num_test=0, seed=1)
    batches = {}
    for split, name in (("train", "train_data"), ("val", "val_data")):
        sources, targets = ([pair[side] for pair in splits[split]] for side in (0, 1))
        encoded = encode_pairs(tokenizer, sources, targets, max_length=64)
        batches[name] = make_batches(encoded, max_tokens=512, max_length=64, seed=0)
    return batches


@pytest.fixture(autouse=True)
def _doctest_folder(request: pytest.FixtureRequest):
    """A docstring example runs in its `tmp_path`, with the names of the module docstring."""
    example = getattr(request.node, "dtest", None)  # a doctest.DocTest, for doctest items
    if example is None:
        yield
        return
    import keras
    import numpy as np

    folder = request.getfixturevalue("tmp_path")
    namespace = request.getfixturevalue("doctest_namespace")  # the session's: emptied below
    names = {"np": np, "keras": keras}
    text = example.docstring or ""
    if RUN in text or "train_data" in text:
        shutil.copytree(request.getfixturevalue("_trained_run"), folder / RUN)
    if "train_data" in text:
        names.update(request.getfixturevalue("_batches"))
    namespace.update(names)
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(cwd)
        keras.config.set_dtype_policy("float32")
        for name in names:
            namespace.pop(name, None)
