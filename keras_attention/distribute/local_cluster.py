"""A cluster of workers on this machine, for trying and testing multi-worker training.

    python -m keras_attention.distribute.local_cluster --workers 2 -- python tools/train.py

starts the command once per worker, each with its own `TF_CONFIG` naming free ports on
127.0.0.1 and one intra-op thread, waits for all of them (killing every one of them when one
fails or the time runs out), and exits with the first non-zero exit status.
"""

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports that were free on 127.0.0.1 a moment ago."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for each in sockets:
            each.bind(("127.0.0.1", 0))
        return [each.getsockname()[1] for each in sockets]
    finally:
        for each in sockets:
            each.close()


def tf_config(addresses: Sequence[str], index: int) -> str:
    """The `TF_CONFIG` of worker `index` in a cluster of workers at `addresses`."""
    return json.dumps(
        {"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": index}}
    )


@dataclasses.dataclass
class WorkerResult:
    """How one worker ended.

    Attributes:
        index: the worker's index in `TF_CONFIG`.
        returncode: its exit status (negative: killed by that signal).
        output: what it printed (stdout and stderr), when captured.
        seconds: how long it ran.
        killed: whether the cluster killed it (time out, or another worker failed).
    """

    index: int
    returncode: int
    output: str
    seconds: float
    killed: bool


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL the process's whole group (it runs in its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def run_local_cluster(
    command: Sequence[str],
    num_workers: int = 2,
    timeout: float = 600.0,
    env: Mapping[str, str] | None = None,
    worker_env: Sequence[Mapping[str, str]] | None = None,
    intra_op_threads: int = 1,
    capture: bool = True,
    stop_on_failure: bool = True,
    cwd: str | os.PathLike | None = None,
) -> list[WorkerResult]:
    """Runs `command` as `num_workers` workers of one cluster on 127.0.0.1 and reaps them all.

    Every worker runs in its own process group; when this returns or raises, no worker (and
    no child of one) is left running.

    Args:
        command: the program and its arguments, the same for every worker.
        num_workers: how many workers.
        timeout: seconds for the whole cluster; the workers still running then are killed.
        env: environment of every worker (default: this process's), to which `TF_CONFIG`
            and the thread settings are added.
        worker_env: per worker, extra variables.
        intra_op_threads: `TF_NUM_INTRAOP_THREADS` of each worker (and one inter-op thread).
        capture: keep each worker's output in `WorkerResult.output` (else it goes to ours).
        stop_on_failure: kill the other workers as soon as one exits with an error, instead
            of letting them find out (by their own timeouts).
        cwd: working folder of the workers.

    Returns:
        One `WorkerResult` per worker, in index order.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be at least 1; got {num_workers}")
    if worker_env is not None and len(worker_env) != num_workers:
        raise ValueError(f"worker_env needs {num_workers} entries; got {len(worker_env)}")
    addresses = [f"127.0.0.1:{port}" for port in free_ports(num_workers)]
    base = dict(os.environ if env is None else env)
    base.update(
        TF_NUM_INTRAOP_THREADS=str(intra_op_threads),
        TF_NUM_INTEROP_THREADS="1",
        PYTHONUNBUFFERED="1",
    )
    with tempfile.TemporaryDirectory(prefix="local-cluster-") as logs:
        processes, files, started = [], [], time.monotonic()
        ended: dict[int, float] = {}
        killed: set[int] = set()
        try:
            for index in range(num_workers):
                worker = {**base, "TF_CONFIG": tf_config(addresses, index)}
                worker.update(worker_env[index] if worker_env else {})
                log = open(Path(logs) / f"worker{index}.log", "wb") if capture else None  # noqa: SIM115
                files.append(log)
                processes.append(
                    subprocess.Popen(
                        list(command),
                        env=worker,
                        cwd=cwd,
                        stdout=log,
                        stderr=subprocess.STDOUT if capture else None,
                        start_new_session=True,
                    )
                )
            while len(ended) < num_workers:
                for index, process in enumerate(processes):
                    if index not in ended and process.poll() is not None:
                        ended[index] = time.monotonic() - started
                failed = any(processes[index].returncode != 0 for index in ended)
                if time.monotonic() - started > timeout or (stop_on_failure and failed):
                    break
                time.sleep(0.2)
        finally:
            for index, process in enumerate(processes):
                if process.poll() is None:
                    killed.add(index)
                _kill(process)
                process.wait()
                ended.setdefault(index, time.monotonic() - started)
            for log in files:
                if log is not None:
                    log.close()
        return [
            WorkerResult(
                index,
                process.returncode,
                (Path(logs) / f"worker{index}.log").read_text(errors="replace") if capture else "",
                ended[index],
                index in killed,
            )
            for index, process in enumerate(processes)
        ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--intra-op-threads", type=int, default=1)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- program arguments...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1; got {args.workers}")
    results = run_local_cluster(
        command, args.workers, args.timeout, intra_op_threads=args.intra_op_threads, capture=False
    )
    for result in results:
        status = "killed" if result.killed else f"exit status {result.returncode}"
        print(f"worker {result.index}: {status} after {result.seconds:.0f} s", file=sys.stderr)
    return next((abs(r.returncode) for r in results if r.returncode != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
