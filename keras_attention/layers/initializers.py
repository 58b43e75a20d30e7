"""Initializer helpers shared by the layers."""

import zlib

import keras


def clone_initializer(initializer, salt: str = ""):
    """A fresh copy of `initializer` for the sub-layer named `salt`.

    A seeded initializer gets a seed derived from its own and from `salt`, so that sub-layers
    given one seeded initializer (Q, K and V; every block of a stack) start from different
    weights, and the same seed still gives the same model every time.

    Args:
        initializer: an initializer, its name or its config.
        salt: the sub-layer's name (or path) that makes its seed distinct.

    Returns:
        A new initializer instance.
    """
    initializer = keras.initializers.get(initializer)
    config = initializer.get_config()
    seed = config.get("seed")
    if isinstance(seed, int) and salt:
        config["seed"] = (seed * 1_000_003 + zlib.crc32(salt.encode())) % 2**31
    return initializer.__class__.from_config(config)
