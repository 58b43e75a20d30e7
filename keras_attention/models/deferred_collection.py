"""One garbage collection instead of one per deleted variable, in the thread that asks.

Keras' `Layer.__delattr__` runs a full `gc.collect()` each time a layer drops a variable,
which `Model.quantize` does for every kernel it replaces: 65 times for the `tiny` preset, about
0.5 s each in a process that has imported TensorFlow (the collection walks every Python
object), so quantizing a 1.8 M-parameter model took over 30 s. The collections in between free
nothing that one collection at the end does not.

Keras calls `gc.collect` by its module attribute, so the deferral has to stand in for that
attribute; it defers only the calls made by a thread inside the block. A call from any other
thread collects at once, as it would without the block.
"""

import contextlib
import gc
import threading
from collections.abc import Iterator

_state = threading.local()  # `depth`: nesting of the block in this thread; `asked`: calls made
_lock = threading.Lock()
_installed = {"collect": None, "users": 0}  # the real `gc.collect` while any thread defers


def _collect_unless_deferred(*args, **kwargs) -> int:
    if getattr(_state, "depth", 0):
        _state.asked = True
        return 0
    return _installed["collect"](*args, **kwargs)


@contextlib.contextmanager
def deferred_garbage_collection() -> Iterator[None]:
    """Within the block, this thread's `gc.collect()` calls do nothing; on leaving it (even by
    an exception) the real `gc.collect` runs once if one was asked for. Other threads'
    collections run when they ask.

    Example:

    >>> dense = keras.layers.Dense(8)
    >>> dense.build((None, 4))
    >>> with deferred_garbage_collection():  # one collection at the end, not one per kernel
    ...     dense.quantize("int8")
    >>> dense.dtype_policy.name
    'int8_from_float32'
    """
    with _lock:
        if _installed["users"] == 0:
            _installed["collect"] = gc.collect
            gc.collect = _collect_unless_deferred
        _installed["users"] += 1
        collect = _installed["collect"]
    outermost = not getattr(_state, "depth", 0)
    if outermost:
        _state.asked = False
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1
        with _lock:
            _installed["users"] -= 1
            if _installed["users"] == 0:
                gc.collect = _installed["collect"]
                _installed["collect"] = None
        if outermost and _state.asked:
            collect()
