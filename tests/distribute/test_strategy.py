"""`get_strategy`, and one step under MirroredStrategy equal to one step on one device."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from keras_attention.distribute import get_strategy

SCRIPT = Path(__file__).parents[1] / "scripts" / "mirrored_step.py"


@pytest.fixture(scope="module")
def mirrored_run() -> dict:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_one_mirrored_step_equals_one_single_device_step(mirrored_run: dict):
    assert mirrored_run["replicas"] == 2
    assert mirrored_run["max_weight_change"] > 1e-2  # the step really moved the weights
    assert mirrored_run["max_weight_difference"] < 1e-5


def test_fit_runs_to_completion_under_the_strategy(mirrored_run: dict):
    assert mirrored_run["fit_epochs"] == 2
    assert mirrored_run["fit_loss_finite"]
    assert mirrored_run["steps"] == 12  # 2 epochs x 6 batches


def test_replicas_draw_their_own_dropout_masks(mirrored_run: dict):
    # Keras's Dropout drops the same units on every replica (a mirrored seed state) ...
    assert mirrored_run["keras_dropout_masks_identical"]
    # ... after enable_replica_dropout it does not, keeps about half of the units on each,
    # and replica 0 draws the mask one device draws.
    assert mirrored_run["replica_dropout_masks_differ"]
    for kept in mirrored_run["replica_dropout_kept"]:
        assert abs(kept - 0.5) < 0.05  # 2,048 draws: standard deviation 0.011
    assert mirrored_run["replica_0_mask_is_keras_mask"]
    # The ReplicaDropout layer of old files draws the same masks.
    assert mirrored_run["old_layer_draws_the_same_masks"]


def test_a_run_s_fixes_reach_every_seed_generator_of_the_model(mirrored_run: dict):
    # Embedding, attention, residual and feed-forward dropout of one encoder and one decoder
    # block: every generator of the model draws the replica's masks under the strategy.
    assert mirrored_run["seed_generators"] >= 8
    assert mirrored_run["replica_seed_generators"] == mirrored_run["seed_generators"]


def test_default_strategy_for_one_device():
    assert get_strategy() is tf.distribute.get_strategy()
    assert get_strategy(["/cpu:0"]).num_replicas_in_sync == 1


@pytest.mark.parametrize(
    ("devices", "match"),
    [(["/gpu:7", "/cpu:0"], "unknown device '/gpu:7'"), (["/cpu:0", "/cpu:0"], "must not repeat")],
)
def test_bad_devices_are_named(devices: list, match: str):
    with pytest.raises(ValueError, match=match):
        get_strategy(devices)
