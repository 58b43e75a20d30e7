"""Atomic writes: the destination is the old file or the whole new one, never a part."""

import os

import pytest

from keras_attention.core import atomic_files
from keras_attention.core.atomic_files import write_bytes_atomically


def test_write_bytes_atomically_replaces_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "folder" / "model.bin"
    assert write_bytes_atomically(path, b"old") == path
    write_bytes_atomically(path, b"new \x00 bytes")
    assert path.read_bytes() == b"new \x00 bytes"
    assert os.listdir(path.parent) == ["model.bin"]


def test_write_bytes_atomically_cleans_up_after_a_failure(tmp_path, monkeypatch):
    path = tmp_path / "model.bin"
    path.write_bytes(b"old")

    def failing_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(atomic_files.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_bytes_atomically(path, b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["model.bin"]
