"""The memorise test's accuracies over seeds, to set its threshold from measured spread.

    KERAS_BACKEND=tensorflow python -m tests.scripts.memorise_spread mixed_float16 1234 1 2
    TF_ENABLE_ONEDNN_OPTS=0 python -m tests.scripts.memorise_spread float32 1234 1
    MUTATE=nocausal python -m tests.scripts.memorise_spread float32 1234   # the bug it catches

Prints one JSON line a seed: the epochs, the first and last losses, the three accuracies of
`tests/training/test_memorize.py::memorise` and the settings that change the kernels. With
`MUTATE=nocausal` the decoder's causal mask is removed (it sees later target tokens). The
record is in docs/development.md, "Tests that hold on any machine".
"""

import json
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras

from tests.training.test_memorize import memorise


def remove_the_causal_mask() -> None:
    """Every causal mask all ones: the decoder sees the whole target."""
    from keras_attention import masks

    real = masks.causal_mask
    masks.causal_mask = lambda q, k=None, offset=0: keras.ops.ones_like(real(q, k, offset))


def main(argv: list[str]) -> None:
    policy, seeds = argv[0], [int(seed) for seed in argv[1:]]
    mutate = os.environ.get("MUTATE", "")
    if mutate == "nocausal":
        remove_the_causal_mask()
    for seed in seeds:
        keras.config.set_dtype_policy(policy)
        keras.utils.set_random_seed(seed)
        started = time.monotonic()
        result = memorise(policy)
        result.update(
            policy=policy,
            seed=seed,
            seconds=round(time.monotonic() - started, 1),
            backend=keras.backend.backend(),
            onednn=os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
            isa=os.environ.get("ONEDNN_MAX_CPU_ISA", "default"),
            threads=os.environ.get("TF_NUM_INTRAOP_THREADS", "default"),
            mutate=mutate,
        )
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
