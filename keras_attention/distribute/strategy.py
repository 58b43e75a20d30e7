"""Choosing a `tf.distribute` strategy for `model.fit`."""

from collections.abc import Sequence

import tensorflow as tf

from keras_attention.distribute.cluster import is_multi_worker, multi_worker_strategy


def get_strategy(
    devices: Sequence[str] | None = None, connect_timeout: float = 300.0
) -> tf.distribute.Strategy:
    """The strategy for this process: `MultiWorkerMirroredStrategy` when `TF_CONFIG` names a
    cluster of several workers, `MirroredStrategy` over several local devices, else the
    default strategy.

    Under `TF_CONFIG`, call it first thing in the program, before TensorFlow runs any op
    (see `keras_attention.distribute.cluster.multi_worker_strategy`).

    Args:
        devices: device names such as `["/gpu:0", "/gpu:1"]` or `["/cpu:0", "/cpu:1"]`;
            `None` uses every GPU when there are several, else the default strategy.
            Not allowed with a multi-worker `TF_CONFIG` (each worker uses its GPUs).
        connect_timeout: seconds the workers of a cluster wait for each other to join.

    Returns:
        A strategy; build and compile the model inside `strategy.scope()`.

    Raises:
        ValueError: for an unknown device name, a repeated device, a bad `TF_CONFIG`, or
            devices given with a multi-worker `TF_CONFIG`.
        ConnectionError: when the workers of the cluster did not all join in time.

    Example:

    >>> from keras_attention import Transformer
    >>> strategy = get_strategy()
    >>> with strategy.scope():
    ...     model = Transformer.from_preset("small", vocabulary_size=8000)
    >>> strategy.num_replicas_in_sync  # one CPU, no TF_CONFIG
    1
    """
    if is_multi_worker():
        if devices:
            raise ValueError(
                f"devices={list(devices)} cannot be chosen under a multi-worker TF_CONFIG: "
                "every worker trains on all its GPUs (or its CPU)"
            )
        return multi_worker_strategy(connect_timeout=connect_timeout)
    if devices is None:
        gpus = tf.config.list_logical_devices("GPU")
        devices = [gpu.name for gpu in gpus] if len(gpus) > 1 else []
    devices = list(devices)
    if len(set(devices)) != len(devices):
        raise ValueError(f"devices must not repeat; got devices={devices}")
    known = {device.name.lower() for device in tf.config.list_logical_devices()}
    for device in devices:
        if _canonical(device) not in known:
            raise ValueError(f"unknown device {device!r}; the logical devices are {sorted(known)}")
    if len(devices) <= 1:
        if devices:
            return tf.distribute.OneDeviceStrategy(devices[0])
        return tf.distribute.get_strategy()
    return tf.distribute.MirroredStrategy(devices)


def _canonical(device: str) -> str:
    """`"/gpu:0"` or `"GPU:0"` -> `"/device:gpu:0"`, the lower-cased logical device name."""
    name = device.lower().lstrip("/")
    if name.startswith("device:"):
        return "/" + name
    if name.startswith("job:"):
        return "/" + name
    return "/device:" + name
