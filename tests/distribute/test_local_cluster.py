"""`keras_attention.distribute.local_cluster` with small Python commands as workers (no TensorFlow
cluster is formed)."""

import json
import socket
import sys
import time
from pathlib import Path

import pytest

from keras_attention.distribute.cluster import read_tf_config
from keras_attention.distribute.local_cluster import free_ports, main, run_local_cluster, tf_config

# Prints the worker's TF_CONFIG index, TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS and EXTRA.
REPORT = (
    "import json, os; "
    "print('index', json.loads(os.environ['TF_CONFIG'])['task']['index']); "
    "print('intra', os.environ['TF_NUM_INTRAOP_THREADS']); "
    "print('inter', os.environ['TF_NUM_INTEROP_THREADS']); "
    "print('extra', os.environ.get('EXTRA'))"
)

# Starts a grandchild `sleep 60` in the worker's process group, prints its pid, then either
# sleeps 60 s or exits at once (when argv[1] is "exit").
GRANDCHILD = (
    "import subprocess, sys, time; "
    "child = subprocess.Popen(['sleep', '60']); "
    "print('grandchild', child.pid, flush=True); "
    "sys.exit(0) if sys.argv[1:] == ['exit'] else time.sleep(60)"
)

# Worker 1 exits with status 3 at once; worker 0 sleeps 60 s.
ONE_FAILS = (
    "import json, os, sys, time; "
    "index = json.loads(os.environ['TF_CONFIG'])['task']['index']; "
    "sys.exit(3) if index == 1 else time.sleep(60)"
)


def python(code: str, *args: str) -> list[str]:
    """The command running `code` with this interpreter."""
    return [sys.executable, "-c", code, *args]


def is_running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, which only awaits reaping, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    """Whether `pid` stops running within `seconds` (time for the signal to land)."""
    deadline = time.monotonic() + seconds
    while is_running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def grandchild_pids(output: str) -> list[int]:
    """The pids printed as `grandchild PID` lines."""
    return [int(line.split()[1]) for line in output.splitlines() if line.startswith("grandchild")]


# free_ports and tf_config


def test_free_ports_are_distinct_bindable_ints():
    ports = free_ports(5)
    assert len(ports) == 5
    assert len(set(ports)) == 5
    assert all(isinstance(port, int) and 0 < port < 65536 for port in ports)
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in ports]
    try:
        for each, port in zip(sockets, ports, strict=True):
            each.bind(("127.0.0.1", port))  # raises OSError when the port is taken
    finally:
        for each in sockets:
            each.close()


def test_free_ports_of_zero_is_empty():
    assert free_ports(0) == []


@pytest.mark.parametrize("index", [0, 1, 2])
def test_tf_config_reads_back_as_the_right_task(index: int):
    addresses = ["127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"]
    text = tf_config(addresses, index)
    assert json.loads(text)["task"] == {"type": "worker", "index": index}
    config = read_tf_config({"TF_CONFIG": text})
    assert config.task_type == "worker"
    assert config.task_index == index
    assert config.addresses == addresses
    assert config.address == addresses[index]
    assert config.is_chief is (index == 0)


# run_local_cluster


def test_each_worker_gets_its_own_tf_config_and_one_thread():
    results = run_local_cluster(
        python(REPORT), num_workers=3, timeout=30, worker_env=[{"EXTRA": f"e{i}"} for i in range(3)]
    )
    assert [result.index for result in results] == [0, 1, 2]
    for index, result in enumerate(results):
        assert result.returncode == 0, result.output
        assert not result.killed
        lines = result.output.splitlines()
        assert f"index {index}" in lines
        assert "intra 1" in lines
        assert "inter 1" in lines
        assert f"extra e{index}" in lines
        assert 0 <= result.seconds < 30


def test_intra_op_threads_and_env_reach_the_workers():
    env = {"PATH": "/usr/bin:/bin", "EXTRA": "shared"}
    results = run_local_cluster(
        python(REPORT), num_workers=2, timeout=30, env=env, intra_op_threads=4
    )
    for result in results:
        assert result.returncode == 0, result.output
        assert "intra 4" in result.output.splitlines()
        assert "extra shared" in result.output.splitlines()


def test_output_not_captured_is_empty(capfd: pytest.CaptureFixture[str]):
    results = run_local_cluster(python("print('to the terminal')"), num_workers=1, capture=False)
    assert results[0].returncode == 0
    assert results[0].output == ""
    assert "to the terminal" in capfd.readouterr().out


def test_timeout_kills_workers_and_their_children():
    started = time.monotonic()
    results = run_local_cluster(python(GRANDCHILD), num_workers=2, timeout=2)
    elapsed = time.monotonic() - started
    assert 2 <= elapsed < 10
    pids = []
    for result in results:
        assert result.killed
        assert result.returncode < 0  # ended by a signal
        assert 2 <= result.seconds < 10
        pids += grandchild_pids(result.output)
    assert len(pids) == 2, [result.output for result in results]
    for pid in pids:
        assert wait_gone(pid), f"grandchild {pid} still runs"


def test_children_of_finished_workers_are_killed():
    results = run_local_cluster(python(GRANDCHILD, "exit"), num_workers=2, timeout=30)
    pids = []
    for result in results:
        assert result.returncode == 0, result.output
        assert not result.killed
        assert result.seconds < 10
        pids += grandchild_pids(result.output)
    assert len(pids) == 2, [result.output for result in results]
    for pid in pids:
        assert wait_gone(pid), f"grandchild {pid} still runs"


def test_a_failing_worker_stops_the_others():
    started = time.monotonic()
    results = run_local_cluster(python(ONE_FAILS), num_workers=2, timeout=60)
    assert time.monotonic() - started < 10
    assert results[0].killed
    assert results[0].returncode < 0
    assert not results[1].killed
    assert results[1].returncode == 3


def test_without_stop_on_failure_the_others_run_until_the_timeout():
    started = time.monotonic()
    results = run_local_cluster(python(ONE_FAILS), num_workers=2, timeout=3, stop_on_failure=False)
    elapsed = time.monotonic() - started
    assert 3 <= elapsed < 10
    assert results[0].killed
    assert results[0].returncode < 0
    assert results[0].seconds >= 3
    assert not results[1].killed
    assert results[1].returncode == 3
    assert results[1].seconds < 3


def test_cwd_is_the_workers_folder(tmp_path: Path):
    results = run_local_cluster(
        python("import os; print(os.getcwd())"), num_workers=1, timeout=30, cwd=tmp_path
    )
    assert results[0].returncode == 0
    assert Path(results[0].output.strip()).resolve() == tmp_path.resolve()


@pytest.mark.parametrize("num_workers", [0, -1])
def test_num_workers_must_be_positive(num_workers: int):
    with pytest.raises(ValueError, match="num_workers must be at least 1"):
        run_local_cluster(python("pass"), num_workers=num_workers)


@pytest.mark.parametrize("entries", [1, 3])
def test_worker_env_needs_one_entry_per_worker(entries: int):
    with pytest.raises(ValueError, match=f"worker_env needs 2 entries; got {entries}"):
        run_local_cluster(python("pass"), num_workers=2, worker_env=[{}] * entries)


# main


def test_main_returns_zero_when_every_worker_succeeds(capfd: pytest.CaptureFixture[str]):
    assert main(["--workers", "2", "--", sys.executable, "-c", "import sys; sys.exit(0)"]) == 0
    err = capfd.readouterr().err
    assert "worker 0: exit status 0" in err
    assert "worker 1: exit status 0" in err


def test_main_returns_the_failing_status(capfd: pytest.CaptureFixture[str]):
    code = main(["--workers", "2", "--", sys.executable, "-c", "import sys; sys.exit(5)"])
    assert code == 5
    assert "exit status 5" in capfd.readouterr().err


def test_main_reports_a_timeout_as_non_zero(capfd: pytest.CaptureFixture[str]):
    code = main(["--workers", "1", "--timeout", "1", "--", *python("import time; time.sleep(60)")])
    assert code != 0
    assert "worker 0: killed" in capfd.readouterr().err


def test_main_passes_the_thread_count(capfd: pytest.CaptureFixture[str]):
    code = "import os, sys; sys.exit(os.environ['TF_NUM_INTRAOP_THREADS'] != '2')"
    assert main(["--workers", "1", "--intra-op-threads", "2", "--", *python(code)]) == 0
    assert main(["--workers", "1", "--", *python(code)]) == 1


def test_main_needs_a_command():
    with pytest.raises(SystemExit) as raised:
        main(["--workers", "2", "--"])
    assert raised.value.code == 2
