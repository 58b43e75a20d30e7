"""`wide_top_k` against a NumPy ranking: the same values and indices as `top_k`, ties included.

Among equal values TensorFlow's and JAX's `top_k` put the lowest index first, and so does
`wide_top_k` there; PyTorch's `topk` orders ties arbitrarily, so there only the values and
the validity of the indices are compared.
"""

import keras
import numpy as np
import pytest

from keras_attention.decoding.wide_top_k import wide_top_k
from tests.conftest import to_numpy


def numpy_top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Largest first; among equal values the lowest index first (a stable sort of -x)."""
    order = np.argsort(-x, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(x, order, axis=-1), order


def assert_top_k(x: np.ndarray, k: int, values, indices) -> None:
    """`values`/`indices` are `x`'s top `k`: exactly the stable ranking where `top_k` is
    stable; on PyTorch the same values at distinct indices that hold them."""
    values, indices = to_numpy(values), to_numpy(indices)
    want_values, want_indices = numpy_top_k(x, k)
    np.testing.assert_array_equal(values, want_values)
    assert str(indices.dtype) == "int32"
    if keras.backend.backend() != "torch":
        np.testing.assert_array_equal(indices, want_indices)
        return
    np.testing.assert_array_equal(np.take_along_axis(x, indices.astype("int64"), -1), values)
    assert all(len(set(row)) == k for row in indices.tolist())


def rows(kind: str, shape: tuple) -> np.ndarray:
    rng = np.random.default_rng(len(kind) + shape[1])
    if kind == "random":
        return rng.normal(size=shape).astype("float32")
    if kind == "ties":  # few distinct values: many ties at every rank
        return rng.integers(0, 3, size=shape).astype("float32")
    if kind == "all_equal":
        return np.full(shape, -2.5, "float32")
    # Banned entries, as beam search makes them (-1e9), and a few -inf.
    x = rng.normal(size=shape).astype("float32")
    x[:, ::7] = -1e9
    x[:, 3::11] = -np.inf
    return x


@pytest.mark.parametrize("kind", ["random", "ties", "all_equal", "banned"])
@pytest.mark.parametrize(
    ("width", "k", "block"),
    [(1000, 5, 8), (1003, 8, 16), (4096, 1, 32), (640, 4, 40), (50, 3, 8)],
    ids=["blocks", "ragged_last_block", "k1", "exact_blocks", "narrow_rows_direct"],
)
def test_equals_a_stable_ranking(kind: str, width: int, k: int, block: int):
    x = rows(kind, (6, width))
    values, indices = wide_top_k(x, k, block=block)
    assert_top_k(x, k, values, indices)


def test_a_row_whose_best_entries_share_one_block():
    x = np.zeros((2, 800), "float32")
    x[0, 100:105] = [5, 4, 3, 2, 1]  # all in block 12 of 8 entries (96..103) and 13
    x[1, [7, 799]] = [1, 2]  # the first and the (ragged) last block
    values, indices = wide_top_k(x, 5, block=8)
    assert_top_k(x, 5, values, indices)
    np.testing.assert_array_equal(to_numpy(values)[0], [5, 4, 3, 2, 1])
    np.testing.assert_array_equal(to_numpy(indices)[0], [100, 101, 102, 103, 104])
