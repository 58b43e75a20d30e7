"""Training on several machines: `TF_CONFIG`, `MultiWorkerMirroredStrategy` with bounded waits,
and the chief's role.

Every worker runs the same program with its own `TF_CONFIG`, for example on the second of two
hosts (`index` 1 of the `worker` job):

```bash
TF_CONFIG='{"cluster": {"worker": ["host1:12345", "host2:12345"]},
            "task": {"type": "worker", "index": 1}}'
```

The first worker (or the `chief` task when the cluster names one) is the chief: it writes the
run's files; the other workers write theirs to temporary folders.
"""

import dataclasses
import json
import os
from collections.abc import Mapping

import tensorflow as tf

# Tasks that train; an "evaluator" or "ps" task is not part of synchronous training.
TRAINING_JOBS = ("chief", "worker")


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """This process's place in a cluster, read from `TF_CONFIG`.

    Attributes:
        cluster: job name -> task addresses (`host:port`).
        task_type: `"chief"` or `"worker"`.
        task_index: index of this task within its job.
    """

    cluster: dict
    task_type: str
    task_index: int

    @property
    def addresses(self) -> list[str]:
        """Addresses of the training tasks, the chief first."""
        return [address for job in TRAINING_JOBS for address in self.cluster.get(job, [])]

    @property
    def address(self) -> str:
        """This task's own address."""
        return self.cluster[self.task_type][self.task_index]

    @property
    def num_workers(self) -> int:
        """Number of training tasks."""
        return len(self.addresses)

    @property
    def worker_index(self) -> int:
        """This task's index among the training tasks (`addresses`): 0 for the chief."""
        return self.addresses.index(self.address)

    @property
    def is_chief(self) -> bool:
        """The `chief` task, or worker 0 when the cluster has no `chief` job."""
        if "chief" in self.cluster:
            return self.task_type == "chief"
        return self.task_index == 0


def read_tf_config(environ: Mapping[str, str] | None = None) -> ClusterConfig | None:
    """The cluster that `TF_CONFIG` describes, or `None` when it is unset or empty.

    Args:
        environ: environment to read (default: `os.environ`).

    Raises:
        ValueError: naming what is wrong in `TF_CONFIG` (not JSON, no `cluster` or `task`, a
            task type other than chief/worker, an index out of range, a repeated address).
    """
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG", "").strip()
    if not text:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}): {text!r}") from None
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError(f'TF_CONFIG needs a "cluster" and a "task" object; got {text!r}')
    unknown = sorted(set(cluster) - set(TRAINING_JOBS))
    if unknown:
        raise ValueError(
            f"TF_CONFIG cluster has jobs {unknown}; synchronous training uses only "
            f"{list(TRAINING_JOBS)}"
        )
    for job, job_addresses in cluster.items():
        if not isinstance(job_addresses, list) or not all(
            isinstance(address, str) and ":" in address for address in job_addresses
        ):
            raise ValueError(
                f'TF_CONFIG job {job!r} must list "host:port" strings; got {job_addresses!r}'
            )
    task_type, task_index = task.get("type"), task.get("index", 0)
    if task_type not in cluster:
        raise ValueError(
            f"TF_CONFIG task type {task_type!r} is not a job of the cluster {sorted(cluster)}"
        )
    addresses = cluster[task_type]
    if type(task_index) is not int or not 0 <= task_index < len(addresses):
        raise ValueError(
            f"TF_CONFIG task index {task_index!r} is out of range for the {len(addresses)} "
            f"{task_type!r} tasks"
        )
    result = ClusterConfig({job: list(cluster[job]) for job in cluster}, task_type, task_index)
    if len(set(result.addresses)) != result.num_workers:
        raise ValueError(f"TF_CONFIG repeats an address: {result.addresses}")
    return result


def is_multi_worker(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `TF_CONFIG` describes a cluster of more than one training task."""
    config = read_tf_config(environ)
    return config is not None and config.num_workers > 1


def multi_worker_strategy(
    connect_timeout: float = 300.0,
    heartbeat_timeout: float = 60.0,
) -> tf.distribute.MultiWorkerMirroredStrategy:
    """`MultiWorkerMirroredStrategy` for the cluster in `TF_CONFIG`, failing in bounded time.

    Out of the box a worker whose peers never start waits forever (the first worker) or for
    an hour. Here every worker waits at most `connect_timeout` seconds for all the others
    to join, then raises `ConnectionError`; once training runs, a worker that stops
    answering for `heartbeat_timeout` seconds makes the others fail instead of hang.

    Call it first thing in the program, before any TensorFlow op runs, on every worker.

    Args:
        connect_timeout: seconds to wait for every worker to join.
        heartbeat_timeout: seconds of silence after which a worker is taken for dead.

    Returns:
        The strategy; build and compile the model inside its `scope()`.

    Raises:
        ValueError: for a bad `TF_CONFIG` or timeouts.
        RuntimeError: when TensorFlow already ran an op in this process.
        ConnectionError: when the workers did not all join within `connect_timeout`.
    """
    if connect_timeout <= 0 or heartbeat_timeout <= 0:
        raise ValueError(
            "timeouts must be positive; got "
            f"connect_timeout={connect_timeout}, heartbeat_timeout={heartbeat_timeout}"
        )
    config = read_tf_config()
    if config is None:
        raise ValueError("TF_CONFIG is not set; it must describe the cluster of workers")
    _configure_coordination(config, connect_timeout, heartbeat_timeout)
    try:
        return tf.distribute.MultiWorkerMirroredStrategy()
    except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError) as error:
        others = [address for address in config.addresses if address != config.address]
        raise ConnectionError(
            f"{config.task_type} {config.task_index} ({config.address}) could not form the "
            f"cluster with {others} within {connect_timeout:g} s: start every worker of "
            f"TF_CONFIG and check that these addresses are reachable "
            f"({type(error).__name__}: {str(error).splitlines()[0]})"
        ) from None


def _configure_coordination(
    config: ClusterConfig, connect_timeout: float, heartbeat_timeout: float
) -> None:
    """Sets the coordination service's timeouts, which `MultiWorkerMirroredStrategy` then uses
    (it only fills in its defaults when none is configured)."""
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
    from tensorflow.python.eager import context

    eager = context.context()
    if eager._initialized:
        raise RuntimeError(
            "TensorFlow already ran an op in this process: create the multi-worker strategy "
            "first thing in the program, before any model, dataset or tensor"
        )
    jobs = [
        coordination_config_pb2.CoordinatedJob(name=job, num_tasks=len(config.cluster[job]))
        for job in TRAINING_JOBS
        if job in config.cluster
    ]
    leader = "chief" if "chief" in config.cluster else "worker"
    eager.configure_coordination_service(
        service_type="standalone",
        service_leader=f"/job:{leader}/replica:0/task:0",
        coordinated_jobs=jobs,
        cluster_register_timeout_in_ms=int(connect_timeout * 1000),
        heartbeat_timeout_in_ms=int(heartbeat_timeout * 1000),
    )
    # Without the barrier the first worker waits for the others with no deadline at all.
    eager.coordination_service.cluster_register_with_barrier = True


def is_chief(strategy: tf.distribute.Strategy | None = None) -> bool:
    """Whether this process writes the run's files: true except on non-chief workers of a
    `MultiWorkerMirroredStrategy` cluster."""
    strategy = strategy or tf.distribute.get_strategy()
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return True
    if not resolver.cluster_spec().as_dict():
        return True
    config = ClusterConfig(resolver.cluster_spec().as_dict(), resolver.task_type, resolver.task_id)
    return config.is_chief


def barrier(strategy: tf.distribute.Strategy) -> None:
    """Returns once every worker of `strategy` has reached it (an all-reduce of a constant)."""
    if strategy.num_replicas_in_sync == 1:
        return
    ones = strategy.run(lambda: tf.constant(1.0))
    strategy.reduce(tf.distribute.ReduceOp.SUM, ones, axis=None).numpy()
