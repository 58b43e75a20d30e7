"""One streaming measurement in a fresh process, run by `stream_throughput.py`.

    python stream_worker.py SPEC_FILE

SPEC_FILE: a JSON file, `{"corpus_dir": ..., "tokenizer": ..., "batches": N, "threads": T
or null, "max_tokens": ..., "max_length": ..., "shuffle_buffer": ..., "train_steps": S,
"seed": ...}`. Streams the shards of `corpus_dir` (`stream_batches`): the time from the
start of the stream to its first batch, then `batches` more batches timed, counting the real
(non-padding) source and target tokens. `threads`: tf.data's private thread pool (1 measures
one CPU core). With `train_steps` > 0, then trains a `tiny` Transformer on the stream for
that many steps (`model.fit`). Prints one JSON line, with the process's peak resident memory
(`ru_maxrss`) at the end.
"""

import json
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(spec_file: str) -> None:
    spec = json.loads(Path(spec_file).read_text())
    started = time.monotonic()
    import tensorflow as tf

    from keras_attention.data.streaming import stream_batches, train_shards
    from keras_attention.data.tokenizer import SubwordTokenizer

    tokenizer = SubwordTokenizer.load(spec["tokenizer"])
    sources, targets = train_shards(spec["corpus_dir"])
    result = {"shards": len(sources), "import_and_load_s": time.monotonic() - started}
    begin = time.monotonic()
    dataset = stream_batches(
        sources,
        targets,
        tokenizer,
        max_tokens=spec["max_tokens"],
        max_length=spec["max_length"],
        seed=spec["seed"],
        shuffle_buffer=spec["shuffle_buffer"],
    )
    if spec["threads"]:
        options = tf.data.Options()
        options.threading.private_threadpool_size = spec["threads"]
        options.threading.max_intra_op_parallelism = 1
        options.autotune.cpu_budget = spec["threads"]
        dataset = dataset.with_options(options)
    batches = iter(dataset)
    next(batches)
    result["first_batch_s"] = time.monotonic() - begin
    tokens = padded = 0
    begin = time.monotonic()
    for _ in range(spec["batches"]):
        (source, target_in), _ = next(batches)
        tokens += int(tf.math.count_nonzero(source)) + int(tf.math.count_nonzero(target_in))
        padded += int(tf.size(source)) + int(tf.size(target_in))
    seconds = time.monotonic() - begin
    result.update(
        batches=spec["batches"],
        tokens=tokens,
        padded_tokens=padded,
        seconds=seconds,
        tokens_per_s=tokens / seconds,
        pipeline_peak_mib=peak_mib(),
    )
    if spec["train_steps"]:
        import keras

        from keras_attention.models import Transformer
        from keras_attention.training import compile_with_paper_recipe

        model = Transformer.from_preset("tiny", vocabulary_size=tokenizer.vocabulary_size)
        compile_with_paper_recipe(model)
        begin = time.monotonic()
        model.fit(dataset, steps_per_epoch=spec["train_steps"], epochs=1, verbose=0)
        result["train_steps"] = spec["train_steps"]
        result["train_seconds"] = time.monotonic() - begin
        result["keras"] = keras.__version__
    result["peak_mib"] = peak_mib()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
