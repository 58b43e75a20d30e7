"""Choosing a `tf.distribute` strategy for `model.fit`."""

from collections.abc import Sequence

import tensorflow as tf


def get_strategy(devices: Sequence[str] | None = None) -> tf.distribute.Strategy:
    """`MirroredStrategy` over several devices, the default strategy for one.

    Args:
        devices: device names such as `["/gpu:0", "/gpu:1"]` or `["/cpu:0", "/cpu:1"]`;
            `None` uses every GPU when there are several, else the default strategy.

    Returns:
        A strategy; build and compile the model inside `strategy.scope()`.

    Raises:
        ValueError: for an unknown device name or a repeated device.

    Example:

    >>> strategy = get_strategy()
    >>> with strategy.scope():
    ...     model = Transformer.from_preset("small", vocabulary_size=8000)
    """
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
