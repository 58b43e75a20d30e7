"""`deferred_garbage_collection`: collections inside the block wait for one at its end."""

import gc

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
