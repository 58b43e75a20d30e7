"""`TF_CONFIG` parsing, the chief's role, and the checks done before a multi-worker strategy
is created (no cluster is started here)."""

import json

import pytest
import tensorflow as tf

from keras_attention.data.pipeline import EncodedPairs, make_batches
from keras_attention.distribute import get_strategy
from keras_attention.distribute.cluster import (
    ClusterConfig,
    barrier,
    is_chief,
    is_multi_worker,
    multi_worker_strategy,
    read_tf_config,
)

TWO_WORKERS = {"worker": ["127.0.0.1:2001", "127.0.0.1:2002"]}


def env(cluster: object, task: object | None = None) -> dict[str, str]:
    """An environment whose `TF_CONFIG` holds `cluster` and (when given) `task`."""
    config = {"cluster": cluster}
    if task is not None:
        config["task"] = task
    return {"TF_CONFIG": json.dumps(config)}


def two_workers_config(index: int = 0) -> str:
    """The `TF_CONFIG` text of worker `index` of `TWO_WORKERS`."""
    return env(TWO_WORKERS, {"type": "worker", "index": index})["TF_CONFIG"]


def tiny_pairs() -> EncodedPairs:
    """Six short pairs of token ids: sources ending with EOS, targets `[BOS, ..., EOS]`."""
    sources = [[4, 5, 3], [6, 3], [7, 8, 9, 3], [4, 3], [5, 6, 7, 3], [8, 3]]
    targets = [[2, 4, 3], [2, 5, 6, 3], [2, 7, 3], [2, 8, 9, 4, 3], [2, 5, 3], [2, 6, 7, 3]]
    return EncodedPairs(
        tf.ragged.constant(sources, tf.int32), tf.ragged.constant(targets, tf.int32), 6, 0, 0
    )


# ClusterConfig


def test_addresses_put_the_chief_first():
    # The chief job is listed last on purpose: the order comes from the job, not the dict.
    config = ClusterConfig({"worker": ["w0:1", "w1:1"], "chief": ["c:1"]}, "worker", 1)
    assert config.addresses == ["c:1", "w0:1", "w1:1"]
    assert config.num_workers == 3
    assert config.address == "w1:1"


def test_address_of_the_chief_task():
    config = ClusterConfig({"chief": ["c:1"], "worker": ["w0:1"]}, "chief", 0)
    assert config.address == "c:1"
    assert config.num_workers == 2


def test_worker_zero_is_chief_without_a_chief_job():
    assert ClusterConfig(dict(TWO_WORKERS), "worker", 0).is_chief
    assert not ClusterConfig(dict(TWO_WORKERS), "worker", 1).is_chief


def test_only_the_chief_task_is_chief_with_a_chief_job():
    cluster = {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]}
    assert ClusterConfig(cluster, "chief", 0).is_chief
    assert not ClusterConfig(cluster, "worker", 0).is_chief
    assert not ClusterConfig(cluster, "worker", 1).is_chief


# read_tf_config


@pytest.mark.parametrize("environ", [{}, {"TF_CONFIG": ""}, {"TF_CONFIG": "  \n\t "}])
def test_unset_or_blank_tf_config_is_none(environ: dict[str, str]):
    assert read_tf_config(environ) is None


def test_reads_the_os_environment_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TF_CONFIG", two_workers_config(1))
    config = read_tf_config()
    assert config == ClusterConfig(TWO_WORKERS, "worker", 1)
    monkeypatch.delenv("TF_CONFIG")
    assert read_tf_config() is None


def test_reads_a_worker_cluster():
    config = read_tf_config(env(TWO_WORKERS, {"type": "worker", "index": 1}))
    assert config.task_type == "worker"
    assert config.task_index == 1
    assert config.address == "127.0.0.1:2002"
    assert config.addresses == TWO_WORKERS["worker"]
    assert not config.is_chief


def test_reads_a_chief_and_worker_cluster():
    cluster = {"worker": ["w0:1", "w1:1"], "chief": ["c:1"]}
    config = read_tf_config(env(cluster, {"type": "chief", "index": 0}))
    assert config.addresses == ["c:1", "w0:1", "w1:1"]
    assert config.is_chief
    assert config.address == "c:1"


def test_index_defaults_to_zero():
    config = read_tf_config(env(TWO_WORKERS, {"type": "worker"}))
    assert config.task_index == 0
    assert config.is_chief


def test_invalid_json_is_an_error():
    with pytest.raises(ValueError, match="not valid JSON"):
        read_tf_config({"TF_CONFIG": '{"cluster": {"worker": ["a:1"]'})


@pytest.mark.parametrize(
    "config",
    [
        {"task": {"type": "worker", "index": 0}},
        {"cluster": TWO_WORKERS},
        {"cluster": ["a:1", "b:1"], "task": {"type": "worker", "index": 0}},
        {"cluster": TWO_WORKERS, "task": "worker"},
    ],
    ids=["no cluster", "no task", "cluster not an object", "task not an object"],
)
def test_missing_cluster_or_task_is_an_error(config: dict):
    with pytest.raises(ValueError, match='needs a "cluster" and a "task"'):
        read_tf_config({"TF_CONFIG": json.dumps(config)})


@pytest.mark.parametrize("job", ["ps", "evaluator"])
def test_job_other_than_chief_or_worker_is_an_error(job: str):
    cluster = {**TWO_WORKERS, job: ["127.0.0.1:3000"]}
    with pytest.raises(ValueError, match=rf"jobs \['{job}'\]"):
        read_tf_config(env(cluster, {"type": "worker", "index": 0}))


@pytest.mark.parametrize("task", [{"type": "chief", "index": 0}, {"index": 0}])
def test_task_type_not_in_cluster_is_an_error(task: dict):
    with pytest.raises(ValueError, match="is not a job of the cluster"):
        read_tf_config(env(TWO_WORKERS, task))


@pytest.mark.parametrize("index", [2, -1, "1", 1.0, None, True])
def test_bad_task_index_is_an_error(index: object):
    with pytest.raises(ValueError, match=r"task index .* out of range for the 2 'worker' tasks"):
        read_tf_config(env(TWO_WORKERS, {"type": "worker", "index": index}))


@pytest.mark.parametrize(
    "cluster",
    [
        {"worker": ["a:1", "a:1"]},
        {"chief": ["a:1"], "worker": ["b:1", "a:1"]},
    ],
    ids=["within a job", "across jobs"],
)
def test_repeated_address_is_an_error(cluster: dict):
    with pytest.raises(ValueError, match="repeats an address"):
        read_tf_config(env(cluster, {"type": "worker", "index": 0}))


# is_multi_worker


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        (env({"worker": ["a:1"]}, {"type": "worker", "index": 0}), False),
        (env({"chief": ["a:1"]}, {"type": "chief", "index": 0}), False),
        (env(TWO_WORKERS, {"type": "worker", "index": 1}), True),
        (env({"chief": ["a:1"], "worker": ["b:1"]}, {"type": "worker", "index": 0}), True),
    ],
    ids=["unset", "one worker", "one chief", "two workers", "chief and worker"],
)
def test_is_multi_worker(environ: dict[str, str], expected: bool):
    assert is_multi_worker(environ) is expected


def test_is_multi_worker_raises_for_a_bad_tf_config():
    with pytest.raises(ValueError, match="not valid JSON"):
        is_multi_worker({"TF_CONFIG": "not json"})


# multi_worker_strategy: the checks made before TensorFlow's context is touched


@pytest.mark.parametrize(
    "timeouts",
    [
        {"connect_timeout": 0},
        {"connect_timeout": -5.0},
        {"heartbeat_timeout": 0},
        {"heartbeat_timeout": -1.0},
    ],
)
def test_multi_worker_strategy_needs_positive_timeouts(
    monkeypatch: pytest.MonkeyPatch, timeouts: dict[str, float]
):
    # TF_CONFIG is unset so that, were the timeouts not checked first, a different error
    # ("not set") would fail the match instead of a strategy being created.
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="timeouts must be positive"):
        multi_worker_strategy(**timeouts)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_multi_worker_strategy_needs_tf_config(monkeypatch: pytest.MonkeyPatch, value: str | None):
    if value is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(ValueError, match="TF_CONFIG is not set"):
        multi_worker_strategy(connect_timeout=1.0, heartbeat_timeout=1.0)


def test_multi_worker_strategy_rejects_a_bad_tf_config(monkeypatch: pytest.MonkeyPatch):
    cluster = {**TWO_WORKERS, "ps": ["127.0.0.1:3000"]}
    monkeypatch.setenv("TF_CONFIG", env(cluster, {"type": "worker", "index": 0})["TF_CONFIG"])
    with pytest.raises(ValueError, match=r"jobs \['ps'\]"):
        multi_worker_strategy(connect_timeout=1.0, heartbeat_timeout=1.0)


def test_multi_worker_strategy_after_an_op_is_an_error(monkeypatch: pytest.MonkeyPatch):
    from tensorflow.python.eager import context

    assert float(tf.constant(1.0) + 1.0) == 2.0  # runs an op: initializes the context
    # Guard: without an initialized context the call below would really configure the
    # coordination service and try to form a cluster.
    assert context.context()._initialized
    monkeypatch.setenv("TF_CONFIG", two_workers_config(0))
    with pytest.raises(RuntimeError, match="already ran an op"):
        multi_worker_strategy(connect_timeout=1.0, heartbeat_timeout=1.0)


# is_chief and barrier outside a cluster


def test_is_chief_with_the_default_strategy():
    assert is_chief() is True
    assert is_chief(tf.distribute.get_strategy()) is True


def test_is_chief_with_a_one_device_strategy():
    assert is_chief(tf.distribute.OneDeviceStrategy("/cpu:0")) is True


def test_barrier_with_a_single_replica_returns():
    assert barrier(tf.distribute.get_strategy()) is None
    assert barrier(tf.distribute.OneDeviceStrategy("/cpu:0")) is None


# get_strategy under a multi-worker TF_CONFIG


def test_get_strategy_refuses_devices_with_two_workers(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TF_CONFIG", two_workers_config(0))
    with pytest.raises(ValueError, match=r"devices=\['/cpu:0'\] cannot be chosen"):
        get_strategy(["/cpu:0"])


def test_get_strategy_passes_a_bad_tf_config_on(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TF_CONFIG", "{oops")
    with pytest.raises(ValueError, match="not valid JSON"):
        get_strategy(["/cpu:0"])


# make_batches under a multi-worker TF_CONFIG


def test_make_batches_needs_a_seed_to_shuffle_with_two_workers(
    monkeypatch: pytest.MonkeyPatch,
):
    pairs = tiny_pairs()
    monkeypatch.setenv("TF_CONFIG", two_workers_config(1))
    with pytest.raises(ValueError, match="seed"):
        make_batches(pairs, max_tokens=32, max_length=8, shuffle=True, seed=None)


def test_make_batches_with_two_workers_accepts_a_seed_or_no_shuffle(
    monkeypatch: pytest.MonkeyPatch,
):
    pairs = tiny_pairs()
    monkeypatch.setenv("TF_CONFIG", two_workers_config(1))
    seeded = make_batches(pairs, max_tokens=32, max_length=8, shuffle=True, seed=3)
    ordered = make_batches(pairs, max_tokens=32, max_length=8, shuffle=False)
    assert int(seeded.cardinality()) == int(ordered.cardinality()) > 0


def test_make_batches_shuffles_without_a_seed_on_one_worker(monkeypatch: pytest.MonkeyPatch):
    pairs = tiny_pairs()
    monkeypatch.setenv("TF_CONFIG", env({"worker": ["a:1"]}, {"type": "worker"})["TF_CONFIG"])
    dataset = make_batches(pairs, max_tokens=32, max_length=8, shuffle=True, seed=None)
    rows = sum(int((source.numpy() != 0).any(axis=1).sum()) for (source, _), _ in dataset)
    assert rows == pairs.num_pairs


def test_make_batches_shards_by_data(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    dataset = make_batches(tiny_pairs(), max_tokens=32, max_length=8, shuffle=True, seed=1)
    policy = dataset.options().experimental_distribute.auto_shard_policy
    assert policy == tf.data.experimental.AutoShardPolicy.DATA


@pytest.mark.parametrize(
    "addresses",
    ["a:1", {"0": "a:1"}, [1, 2], ["hostonly"]],
    ids=["a string", "sparse dict", "not strings", "no port"],
)
def test_a_job_must_list_host_port_strings(addresses: object):
    with pytest.raises(ValueError, match="job 'worker' must list \"host:port\" strings"):
        read_tf_config(env({"worker": addresses}, {"type": "worker", "index": 0}))
