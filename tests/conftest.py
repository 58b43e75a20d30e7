"""Test set-up: TensorFlow by default; `KERAS_BACKEND=torch` or `jax` runs the backend-agnostic
tests (see `tools/run_tests.sh`) on that backend.

The tests listed in `tests/slow_tests.txt` (measured over 1 s) are marked `slow`, which the
quick subset (`tools/run_tests.sh --quick`) leaves out, and the test files are ordered by
their listed seconds, longest first, so that the two processes of `pytest -n 2 --dist loadfile
--no-loadscope-reorder` end at about the same time.
"""

import contextlib
import io
import os
import shutil
from collections import Counter
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest

TEST_SEED = int(os.environ.get("KERAS_ATTENTION_TEST_SEED", "1234"))


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Every test starts with the float32 policy and a fixed seed: 1234, or
    `KERAS_ATTENTION_TEST_SEED` (the suite is checked under other seeds too: a test must not
    pass by one seed's luck; docs/development.md, "Tests that hold on any machine").

    (`keras.backend.clear_session()` is not called: it costs about 0.5 s a test.)
    """
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(TEST_SEED)
    yield
    keras.config.set_dtype_policy("float32")


def to_numpy(x) -> np.ndarray:
    """Any backend tensor as a NumPy array."""
    return keras.ops.convert_to_numpy(x)


# One tiny run folder and its SavedModel for the session: the tests of the tools, of presets
# and of the tools' errors read them (a SavedModel export traces the beam search: many
# seconds). They are shared: a test that changes a run works on a copy.


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory):
    """A run still training, made without training (`tests.runs.test_files.make_tiny_run`):
    config.json, a tokenizer and two epoch checkpoints of random weights, no model.keras."""
    from tests.runs.test_files import make_tiny_run

    return make_tiny_run(tmp_path_factory.mktemp("tiny_run"))


@pytest.fixture(scope="session")
def finished_tiny_run(tiny_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `tiny_run`, finished: `model.keras` holds epoch 1's weights (not the last
    checkpoint's, so that a test can tell which one loaded)."""
    from tests.runs.test_files import run_model

    path = Path(shutil.copytree(tiny_run.path, tmp_path_factory.mktemp("finished") / "run"))
    model = run_model(path)
    model.set_weights(tiny_run.weights[1])
    model.save(path / "model.keras")
    return path


@pytest.fixture(scope="session")
def tiny_saved_model(finished_tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`finished_tiny_run` exported by `tools/export.py` (in this process) with beam size 2:
    version 1 of a folder of its own."""
    from keras_attention_cli.commands.export import main

    output = tmp_path_factory.mktemp("tiny_export")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        main(["--run-dir", str(finished_tiny_run), "--beam-size", "2", "--output", str(output)])
    assert printed.getvalue() == f"exported {output / '1'}\n"
    return output / "1"


SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")


def measured_seconds(path: Path = SLOW_TESTS) -> dict[str, float]:
    """`{test id: seconds}` of the slow-test list (`seconds test-id` lines, `#` comments)."""
    seconds = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            value, node_id = line.split(" ", 1)
            seconds[node_id.strip()] = float(value)
    return seconds


def module_fixtures(item: pytest.Item) -> set[tuple[str, str]]:
    """`(file, fixture name)` of the module- or class-scoped fixtures `item` uses."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    path = item.nodeid.split("::")[0]
    return {
        (path, name)
        for name, definitions in info.name2fixturedefs.items()
        if definitions and definitions[-1].scope in ("module", "class")
    }


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seconds = measured_seconds()
    file_seconds: Counter[str] = Counter()
    # A module-scoped fixture that a slow test builds would be built by the next test that
    # uses it: those tests are slow too.
    costly = set()
    for item in items:
        if item.nodeid in seconds:
            costly |= module_fixtures(item)
    for item in items:
        if item.nodeid in seconds or module_fixtures(item) & costly:
            item.add_marker(pytest.mark.slow)
        file_seconds[item.nodeid.split("::")[0]] += seconds.get(item.nodeid, 0.0)
    # A stable sort: the files' own order of tests is kept.
    items.sort(key=lambda item: -file_seconds[item.nodeid.split("::")[0]])
