"""One run per folder at a time (`keras_attention.runs.run_lock`), and the tools under closed
pipes and signals (`keras_attention_cli.errors.run_tool`), each tool run as a program.

One tiny run is trained for the module: stopped by SIGINT, SIGTERM and SIGKILL in turn, it is
resumed to its end while a second `tools/train.py` on its folder is refused;
`tools/translate.py` then reads it.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from keras_attention.runs.run_lock import LOCK_FILE
from keras_attention_cli.errors import EXIT_BROKEN_PIPE
from tests.run_helpers import kill_when, logged_epochs
from tests.tools.test_tools import TENSORFLOW_ENV
from tests.tools.test_train import ROOT, train_command

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")

EPOCHS = 4
# The end of a run's search (one beam, no averages) and no export: what is tested is before.
RUN_OPTIONS = ("--no-export", "--beam-size", "1", "--average")
PIPE_BYTES = 4096
RESUMES = "the run folder resumes with the same command"


class Finished(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def start(command: list[str], logs: Path) -> subprocess.Popen:
    """Starts `command` in its own session, its stdout and stderr into files under `logs`.

    Ctrl-C is restored for it: a test suite started as a background job (`... &`, `nohup`)
    ignores SIGINT, and a program started ignoring SIGINT keeps ignoring it (as it should).
    """
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / "stdout").open("w") as stdout, (logs / "stderr").open("w") as stderr:
        return subprocess.Popen(
            command,
            stdout=stdout,
            stderr=stderr,
            env=TENSORFLOW_ENV,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )


def finish(process: subprocess.Popen, logs: Path, timeout: float = 600) -> Finished:
    """Waits for `process` (started by `start`) to end; its status and output."""
    try:
        returncode = process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return Finished(returncode, (logs / "stdout").read_text(), (logs / "stderr").read_text())


def wait_for(process: subprocess.Popen, ready: Callable[[], bool], timeout: float = 400) -> None:
    """Returns once `ready()` while `process` still runs; fails if it ends or times out first."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, "the process ended first"
        assert time.monotonic() < deadline, f"not ready within {timeout} s"
        time.sleep(0.02)


def lock_holder(folder: Path) -> int | None:
    """The process id that `folder`'s lock file names (`None` while there is none)."""
    try:
        return json.loads((folder / LOCK_FILE).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


class ContestedRun(NamedTuple):
    folder: Path
    first_pid: int
    first: Finished
    second: Finished
    files_before_second: list[str]
    files_after_second: list[str]


def contest(folder: Path, command: list[str], logs: Path) -> ContestedRun:
    """Starts `command`, a run of `folder`, and trains it to the end while a second (the same
    command) is started on its folder: the first is paused once it holds the lock, the
    second runs to its end, then the first goes on."""
    first = start(command, logs / "first")
    try:
        wait_for(first, lambda: lock_holder(folder) == first.pid)
        os.killpg(first.pid, signal.SIGSTOP)
        before = sorted(path.name for path in folder.iterdir())
        second = start(command, logs / "second")
        second_done = finish(second, logs / "second")
        after = sorted(path.name for path in folder.iterdir())
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    first_done = finish(first, logs / "first")
    return ContestedRun(folder, first.pid, first_done, second_done, before, after)


def backed_up_epochs(folder: Path) -> int:
    """The epochs that the run's backup holds (0 without one)."""
    metadata = folder / "backup" / "training_metadata.json"
    try:
        return json.loads(metadata.read_text())["epoch"]
    except (OSError, ValueError, KeyError):
        return 0


class InterruptedRun(NamedTuple):
    folder: Path
    stopped: dict[signal.Signals, Finished]
    lock_file_left: bool
    resumed: ContestedRun


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory: pytest.TempPathFactory) -> InterruptedRun:
    """A tiny run stopped by SIGINT, SIGTERM and SIGKILL in turn, each once the backup holds
    one more epoch (while the next one trains), then resumed to its end, contested (see
    `contest`)."""
    folder = tmp_path_factory.mktemp("interrupted") / "run"
    logs = folder.parent / "logs"
    command = train_command(folder, EPOCHS, *RUN_OPTIONS)
    stopped = {}
    for signum, backed_up in [(signal.SIGINT, 1), (signal.SIGTERM, 2)]:
        process = start(command, logs / signum.name)
        try:
            wait_for(process, lambda backed_up=backed_up: backed_up_epochs(folder) >= backed_up)
            process.send_signal(signum)
        finally:
            stopped[signum] = finish(process, logs / signum.name, timeout=120)
    kill_when(command, lambda: backed_up_epochs(folder) >= 3)
    lock_file_left = (folder / LOCK_FILE).exists()
    return InterruptedRun(folder, stopped, lock_file_left, contest(folder, command, logs))


@pytest.fixture(scope="module")
def contested_run(interrupted_run: InterruptedRun) -> ContestedRun:
    """The interrupted run's last start, and the second refused meanwhile."""
    return interrupted_run.resumed


def test_a_second_run_on_a_folder_in_use_is_refused(contested_run: ContestedRun):
    second = contested_run.second
    assert second.returncode == 2, second.stderr[-3000:]
    assert "Traceback" not in second.stderr, second.stderr[-3000:]
    [line] = error_lines(second.stderr)
    assert line.startswith(f"error: run folder {contested_run.folder} is in use by process ")
    assert f"process {contested_run.first_pid} " in line
    # Refused before any work: it wrote nothing into the folder.
    assert contested_run.files_after_second == contested_run.files_before_second
    # The first run went on and finished its epochs, each once.
    first = contested_run.first
    assert first.returncode == 0, first.stderr[-3000:]
    assert logged_epochs(contested_run.folder) == list(range(EPOCHS))
    assert (contested_run.folder / "model.keras").is_file()
    assert not (contested_run.folder / LOCK_FILE).exists()  # released at the end


def small_pipe() -> tuple[int, int]:
    """A pipe (read and write descriptors) that holds one page: writes into it block, or fail
    once its reader is gone, after a few KiB instead of 64."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        pytest.skip("the size of a pipe cannot be set here")
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) == PIPE_BYTES
    return read_end, write_end


def test_output_into_a_closed_pipe_ends_quietly(contested_run: ContestedRun, tmp_path: Path):
    # At least 8 bytes a line with --scores: more than the pipe holds, so that writes are
    # left to fail once the reader has closed its end.
    lines = 4 * PIPE_BYTES // 8
    sentences = tmp_path / "sentences.en"
    sentences.write_text("A man rides a bike.\n" * lines)
    command = [sys.executable, str(ROOT / "tools" / "translate.py"), "--run-dir",
               str(contested_run.folder), "--scores", "--beam-size", "1",
               "--batch-size", str(lines), str(sentences)]  # fmt: skip
    read_end, write_end = small_pipe()
    with (tmp_path / "stderr").open("w") as stderr:
        process = subprocess.Popen(command, stdout=write_end, stderr=stderr, env=TENSORFLOW_ENV)
    os.close(write_end)
    try:
        with open(read_end, "rb", buffering=0) as reader:  # `readline` reads a byte at a time
            first_line = reader.readline()  # then closes, as `| head -1` does
        returncode = process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert first_line.decode().count("\t") == 1
    assert (tmp_path / "stderr").read_text() == ""  # no traceback, no message
    assert returncode == EXIT_BROKEN_PIPE


def test_sigint_sigterm_and_sigkill_leave_a_run_that_resumes(interrupted_run: InterruptedRun):
    fresh_start = "training starts at epoch 1, batch 0"
    for signum, done in interrupted_run.stopped.items():
        assert done.returncode == 128 + signum, done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert error_lines(done.stderr) == [f"error: interrupted by {signum.name}; {RESUMES}"]
        assert (fresh_start in done.stderr) == (signum == signal.SIGINT)  # later ones resume
    # SIGKILLed while it holds the lock, it leaves the lock file, but no lock: the next start
    # takes it (test_a_second_run_on_a_folder_in_use_is_refused).
    assert interrupted_run.lock_file_left
    done = interrupted_run.resumed.first
    assert done.returncode == 0, done.stderr[-3000:]
    assert fresh_start not in done.stderr
    assert logged_epochs(interrupted_run.folder) == list(range(EPOCHS))
    assert (interrupted_run.folder / "model.keras").is_file()
