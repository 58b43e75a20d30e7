"""Initializer helpers shared by the layers."""

import keras


def clone_initializer(initializer):
    """Returns a fresh copy of `initializer`, so that sub-layers given a seeded initializer
    do not all start from the same weights."""
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())
