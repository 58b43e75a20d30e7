"""`model.fit`/`evaluate` of the Transformer under MultiWorkerMirroredStrategy: two worker
processes on 127.0.0.1 against one process, a killed worker resumed from the backup, and an
unreachable peer."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from keras_attention.distribute.local_cluster import free_ports, run_local_cluster, tf_config

SCRIPT = Path(__file__).parents[1] / "scripts" / "multi_worker_fit.py"
TIMEOUT = 300
WORKER_PROGRAMS = ("multi_worker_fit.py", "multi_worker_repro.py", "tools/train.py")


MARK = "KERAS_ATTENTION_TEST_MARK"


def running_workers(mark: str) -> list[str]:
    """Command lines of live processes that run a worker program and were started by this test.

    A test's processes inherit `MARK=mark` from it; processes of tests running beside it in
    other pytest workers do not, so they are never counted here.
    """
    found = []
    for folder in Path("/proc").glob("[0-9]*"):
        try:
            text = (folder / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environment = (folder / "environ").read_bytes().split(b"\0")
            status = (folder / "stat").read_text(errors="replace")
        except OSError:  # the process ended meanwhile, or is not ours to read
            continue
        zombie = status.rpartition(")")[2].split()[:1] == ["Z"]
        ours = f"{MARK}={mark}".encode() in environment
        if not zombie and ours and any(name in text for name in WORKER_PROGRAMS):
            found.append(text)
    return found


@pytest.fixture(autouse=True)
def no_worker_left_behind(monkeypatch, request):
    mark = f"{os.getpid()}-{request.node.nodeid}"
    monkeypatch.setenv(MARK, mark)
    yield
    assert running_workers(mark) == []


def run_cluster(out: Path, mode: str, **kwargs) -> list:
    return run_local_cluster(
        [sys.executable, str(SCRIPT), str(out), mode], num_workers=2, timeout=TIMEOUT, **kwargs
    )


def load(out: Path, name: str) -> tuple[dict, list]:
    weights = np.load(out / f"{name}.npz")
    return json.loads((out / f"{name}.json").read_text()), [weights[k] for k in weights.files]


def largest_difference(first: list, second: list) -> float:
    return max(float(np.max(np.abs(a - b))) for a, b in zip(first, second, strict=True))


def assert_succeeded(results: list) -> None:
    for result in results:
        assert result.returncode == 0, f"worker {result.index}:\n{result.output[-4000:]}"


@pytest.fixture(scope="module")
def fit_runs(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("multi_worker_fit")
    assert_succeeded(run_cluster(out, "fit"))
    env = {**os.environ, "TF_NUM_INTRAOP_THREADS": "1", "TF_CONFIG": ""}
    single = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "fit"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert single.returncode == 0, single.stderr[-4000:]
    return {name: load(out, name) for name in ("worker0", "worker1", "single")}


def test_workers_end_with_the_weights_of_one_process(fit_runs: dict):
    (report0, weights0), (report1, weights1) = fit_runs["worker0"], fit_runs["worker1"]
    single_report, single_weights = fit_runs["single"]
    assert report0["replicas"] == report1["replicas"] == 2
    assert single_report["replicas"] == 1
    assert report0["steps"] == report1["steps"] == single_report["steps"] > 1
    assert single_report["max_change"] > 1e-2  # the steps really moved the weights
    assert largest_difference(weights0, weights1) < 1e-6
    assert largest_difference(weights0, single_weights) < 1e-5


def test_evaluate_reports_the_global_metrics(fit_runs: dict):
    single = fit_runs["single"][0]["evaluate"]
    for name in ("worker0", "worker1"):
        metrics = fit_runs[name][0]["evaluate"]
        assert metrics.keys() == single.keys() >= {"loss", "accuracy", "perplexity"}
        for key, value in metrics.items():
            assert value == pytest.approx(single[key], rel=1e-5), key


def test_each_worker_trains_on_its_share_of_every_global_batch(fit_runs: dict):
    shares = [fit_runs[name][0] for name in ("worker0", "worker1")]
    single = fit_runs["single"][0]
    # Every global batch splits evenly between the workers ...
    assert shares[0]["rows"] == shares[1]["rows"]
    assert [2 * rows for rows in shares[0]["rows"]] == single["rows"]
    # ... and their shares of a shuffled epoch are disjoint and cover it.
    assert 0 < len(shares[0]["sources"]) < len(single["sources"])
    together = sorted(map(tuple, shares[0]["sources"] + shares[1]["sources"]))
    assert together == sorted(map(tuple, single["sources"]))


def test_the_first_worker_is_the_chief(fit_runs: dict):
    assert fit_runs["worker0"][0]["is_chief"] is True
    assert fit_runs["worker1"][0]["is_chief"] is False


def test_a_killed_worker_fails_the_cluster_which_then_resumes_from_the_backup(tmp_path: Path):
    killed = run_cluster(
        tmp_path, "resume", worker_env=[{"KILL_AT_EPOCH": "2"}] * 2, stop_on_failure=False
    )
    chief, worker = killed
    assert worker.returncode == -9, worker.output[-3000:]
    # The chief finds out by itself (heartbeats), within the heartbeat timeout and slack.
    assert not chief.killed and chief.returncode != 0
    assert "unhealthy" in chief.output or "UnavailableError" in chief.output, chief.output[-3000:]
    assert chief.seconds - worker.seconds < 60
    backup = json.loads((tmp_path / "backup" / "training_metadata.json").read_text())
    assert backup["epoch"] == 2  # epochs 0 and 1 were backed up before the kill
    first_epochs = (tmp_path / "worker0.epochs").read_text().split()

    assert_succeeded(run_cluster(tmp_path, "resume"))
    for name in ("worker0", "worker1"):
        epochs = (tmp_path / f"{name}.epochs").read_text().split()
        assert epochs == [*first_epochs, "2", "3"]  # resumed at epoch 2, not from scratch
    (report0, weights0), (report1, weights1) = load(tmp_path, "worker0"), load(tmp_path, "worker1")
    assert report0["steps"] == report1["steps"] == 4 * (report0["steps"] // 4)
    assert len(report0["history"]["loss"]) == 2
    assert largest_difference(weights0, weights1) < 1e-6
    assert not (tmp_path / "backup").exists()  # the chief removes the backup at the end


def test_a_worker_whose_peer_never_starts_fails_clearly_in_bounded_time(tmp_path: Path):
    processes, started = [], time.monotonic()
    for index in (0, 1):  # each alone in its own two-worker cluster
        addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
        env = {**os.environ, "TF_CONFIG": tf_config(addresses, index), "CONNECT_TIMEOUT": "5"}
        processes.append(
            (
                addresses[1 - index],
                subprocess.Popen(
                    [sys.executable, str(SCRIPT), str(tmp_path), "fit"],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                ),
            )
        )
    try:
        for missing, process in processes:
            output, _ = process.communicate(timeout=120)
            assert process.returncode != 0
            assert "ConnectionError" in output and "could not form the cluster" in output, output
            assert missing in output  # the message names the peer that never came
    finally:
        for _, process in processes:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()
    assert time.monotonic() - started < 90


def test_the_upstream_reproduction_trains_plain_keras_with_the_helper():
    """tools/multi_worker_repro.py --fix: a two-layer Dense model, fit then evaluate."""
    tool = Path(__file__).parents[2] / "tools" / "multi_worker_repro.py"
    done = subprocess.run(
        [sys.executable, str(tool), "--fix"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    results = [line.split("RESULT ", 1)[1] for line in done.stdout.splitlines() if "RESULT" in line]
    assert len(results) == 2 and results[0] == results[1]  # both workers, same numbers
    losses = json.loads(results[0])["fit_loss"]
    assert losses[1] < losses[0]
