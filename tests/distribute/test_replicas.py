"""`distribute.replicas` without a strategy of several replicas: plain values (under two
replicas, tests/distribute/test_strategy.py checks the sums of the loss and the replicas' own
seeds)."""

import keras
import numpy as np

from keras_attention.distribute.replicas import (
    fold_replica_index,
    global_sum,
    num_replicas,
    replica_index,
)


def test_one_device_has_one_replica_and_no_replica_index():
    assert num_replicas() == 1
    assert replica_index() is None


def test_sums_and_seeds_are_unchanged_on_one_device():
    seed = keras.ops.convert_to_tensor(np.array([7, 3]), "int64")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(fold_replica_index(seed)), [7, 3])
    value = keras.ops.convert_to_tensor(2.5)
    assert float(keras.ops.convert_to_numpy(global_sum(value))) == 2.5
