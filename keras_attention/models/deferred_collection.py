"""One garbage collection instead of one per deleted variable.

Keras' `Layer.__delattr__` runs a full `gc.collect()` each time a layer drops a variable,
which `Model.quantize` does for every kernel it replaces: 65 times for the `tiny` preset, about
0.5 s each in a process that has imported TensorFlow (the collection walks every Python
object), so quantizing a 1.8 M-parameter model took over 30 s. The collections in between free
nothing that one collection at the end does not.
"""

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def deferred_garbage_collection() -> Iterator[None]:
    """Within the block, `gc.collect()` does nothing; on leaving it (even by an exception) the
    real `gc.collect` is back and runs once if it was called.

    `gc.collect` is replaced for the whole process while the block runs, so another thread's
    explicit collections are postponed too (never lost: the one at the end covers them).

    Example:

    >>> dense = keras.layers.Dense(8)
    >>> dense.build((None, 4))
    >>> with deferred_garbage_collection():  # one collection at the end, not one per kernel
    ...     dense.quantize("int8")
    >>> dense.dtype_policy.name
    'int8_from_float32'
    """
    collect = gc.collect
    calls = []
    gc.collect = lambda *args, **kwargs: calls.append(args) or 0
    try:
        yield
    finally:
        gc.collect = collect
        if calls:
            collect()
