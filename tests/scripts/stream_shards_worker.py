"""Run by tests/distribute/test_multi_worker_streams.py as each worker of a local cluster:

    python stream_shards_worker.py DATA_DIR TOKENIZER ROUND_BATCHES

streams `DATA_DIR`'s training shards with `stream_batches` for the cluster's workers, takes
`ROUND_BATCHES` batches as a round of training would (`stream_rounds`), distributes them with
the strategy as `model.fit` does, and prints one line `RESULT {json}`: this worker's index,
the steps it was given and the first word of every source sentence it saw.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_attention.distribute.cluster import multi_worker_strategy, read_tf_config

CLUSTER = read_tf_config()
strategy = multi_worker_strategy(connect_timeout=60.0)  # before TensorFlow runs any op

from keras_attention.data.rounds import stream_rounds  # noqa: E402
from keras_attention.data.streaming import stream_batches, train_shards  # noqa: E402
from keras_attention.data.tokenizer import SubwordTokenizer  # noqa: E402

data_dir, tokenizer_path, round_batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
tokenizer = SubwordTokenizer.load(tokenizer_path)


def stream(number: int):
    return stream_batches(
        *train_shards(data_dir),
        tokenizer,
        max_tokens=64,
        max_length=16,
        batch_multiple=CLUSTER.num_workers,
        seed=number,
        workers=CLUSTER.num_workers,
        worker=CLUSTER.worker_index,
    )


steps, first_words = 0, set()
for (source, _), _ in strategy.experimental_distribute_dataset(
    stream_rounds(stream, round_batches)(0)
):
    steps += 1
    for rows in strategy.experimental_local_results(source):
        for text in tokenizer.detokenize(rows).numpy():
            if text:  # not a padding row
                first_words.add(text.decode().split()[0])
result = {"worker": CLUSTER.task_index, "steps": steps, "first_words": sorted(first_words)}
print("RESULT " + json.dumps(result), flush=True)
