"""Helpers shared by the tests that run the tools: a tool's user error in-process, killing a
training process and resuming it, and recognising TensorFlow's native log lines."""

import contextlib
import csv
import importlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from keras_attention_cli.errors import global_jit_warning

# TensorFlow's own C++ log lines (absl format), which TF 2.21 prints while it is imported
# whatever TF_CPP_MIN_LOG_LEVEL says ("oneDNN custom operations are on", "Could not find cuda
# drivers"): the tools hide them unless given --verbose.
NATIVE_LOG_LINE = re.compile(
    r"[IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] .*"
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
)


def main_error(tool: str, *args: str | Path, stdin: bytes = b"") -> str:
    """Runs the `main` of `tools/<tool>.py` with `args` (and `stdin`) in this process, which
    must fail with a user error: one line, `error: ...`, on stderr, exit status 2, nothing on
    stdout. Returns the line."""
    main = importlib.import_module(f"tools.{tool}").main
    stdout, stderr = io.StringIO(), io.StringIO()
    stdin_text = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    with (
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
        mock.patch.object(sys, "stdin", stdin_text),
        pytest.raises(SystemExit) as exit_info,
    ):
        main([str(arg) for arg in args])
    assert exit_info.value.code == 2, stderr.getvalue()[-3000:]
    # The environment's notice (TF_XLA_FLAGS's global JIT, `global_jit_warning`) is not the
    # tool's error.
    notice = global_jit_warning(os.environ)
    lines = [line for line in stderr.getvalue().splitlines() if line != notice]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr.getvalue()[-3000:]
    assert stdout.getvalue() == ""
    return lines[0]


def logged_epochs(output_dir: Path) -> list[int]:
    """The epochs of `output_dir/training_log.csv`, in file order ([] without the file)."""
    path = output_dir / "training_log.csv"
    if not path.exists():
        return []
    with path.open() as handle:
        return [int(row["epoch"]) for row in csv.DictReader(handle)]


def read_metadata(path: Path) -> dict | None:
    """A backup's JSON metadata, `None` while it is missing or half-written."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def kill_when(command: list[str], ready: Callable[[], bool], timeout: float = 400) -> None:
    """Starts `command` in its own session and SIGKILLs its process group once `ready()`.

    Raises:
        AssertionError: if the process ends first, or `ready()` stays false for `timeout` s.
    """
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, f"not ready to be killed within {timeout} s"
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def regression_batches(steps: int, batch: int):
    """`steps` batches of a small regression task, the same in every epoch (no shuffling)."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * batch, 4)).astype("float32")
    y = np.tanh(x @ rng.normal(size=(4, 1))).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
