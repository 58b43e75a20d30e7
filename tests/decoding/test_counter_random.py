"""The counter-based random numbers of sampling (`decoding.counter_random`): lowbias32 in
int32 `keras.ops` against a NumPy uint32 reference, and uniforms that look uniform."""

import numpy as np

from keras_attention.decoding.counter_random import combine, hash32, uniform
from tests.conftest import to_numpy


def lowbias32(values: np.ndarray) -> np.ndarray:
    """Wellons' lowbias32 over uint32 NumPy arrays, wrapping as unsigned 32-bit ints do."""
    x = values.astype(np.uint64) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return x.astype(np.uint32)


def test_hash32_is_lowbias32_bit_for_bit():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [[0, 1, 2, -1, 2**31 - 1, -(2**31)], rng.integers(-(2**31), 2**31, 1000)]
    ).astype(np.int32)
    got = to_numpy(hash32(values)).view(np.uint32)
    np.testing.assert_array_equal(got, lowbias32(values.view(np.uint32)))


def test_uniforms_are_in_the_open_interval_and_spread_evenly():
    keys = to_numpy(combine(np.arange(64, dtype=np.int32), 5))
    u = to_numpy(uniform(keys, 500))  # 32,000 numbers
    assert u.shape == (64, 500) and u.min() > 0 and u.max() < 1
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    # Each bin expects 3,200 (standard deviation 57): within 5 standard deviations.
    assert np.all(np.abs(counts - 3200) < 5 * 57), counts
    # Neighbouring keys and columns are not correlated.
    assert abs(np.corrcoef(u[:-1].ravel(), u[1:].ravel())[0, 1]) < 0.03
    assert abs(np.corrcoef(u[:, :-1].ravel(), u[:, 1:].ravel())[0, 1]) < 0.03


def test_another_key_or_step_gives_other_numbers():
    first = to_numpy(uniform(to_numpy(combine(np.array([3], np.int32), 0)), 50))
    step = to_numpy(uniform(to_numpy(combine(np.array([3], np.int32), 1)), 50))
    key = to_numpy(uniform(to_numpy(combine(np.array([4], np.int32), 0)), 50))
    again = to_numpy(uniform(to_numpy(combine(np.array([3], np.int32), 0)), 50))
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, step) and not np.allclose(first, key)
