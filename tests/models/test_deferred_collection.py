"""`deferred_garbage_collection`: collections inside the block wait for one at its end."""

import gc
import threading

import pytest

from keras_attention.models.deferred_collection import deferred_garbage_collection


@pytest.fixture
def collections(monkeypatch: pytest.MonkeyPatch) -> list:
    """The real collections made, recorded by a stand-in for `gc.collect`."""
    made = []
    monkeypatch.setattr(gc, "collect", lambda *args: made.append(args) or 0)
    return made


def test_collections_inside_wait_for_one_at_the_end(collections: list):
    real = gc.collect
    with deferred_garbage_collection():
        assert gc.collect is not real
        for _ in range(5):
            assert gc.collect() == 0
        assert collections == []
    assert gc.collect is real
    assert len(collections) == 1


def test_no_collection_at_the_end_when_none_was_asked(collections: list):
    with deferred_garbage_collection():
        pass
    assert collections == []


def test_an_exception_restores_gc_collect_and_still_collects(collections: list):
    real = gc.collect
    with pytest.raises(RuntimeError, match="inside"), deferred_garbage_collection():
        gc.collect()
        raise RuntimeError("inside")
    assert gc.collect is real
    assert len(collections) == 1


def test_another_threads_collections_run_at_once(collections: list):
    with deferred_garbage_collection():
        gc.collect()  # deferred: this thread is inside the block
        other = threading.Thread(target=gc.collect)
        other.start()
        other.join()
        assert len(collections) == 1  # the other thread's, made when it asked
    assert len(collections) == 2  # then this thread's one deferred collection


def test_nested_blocks_collect_once_at_the_outer_end(collections: list):
    real = gc.collect
    with deferred_garbage_collection():
        with deferred_garbage_collection():
            gc.collect()
        assert collections == []
        assert gc.collect is not real
    assert gc.collect is real
    assert len(collections) == 1
