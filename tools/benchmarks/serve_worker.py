"""One serving measurement in a fresh process, run by `serve_throughput.py`.

    python serve_worker.py SPEC_FILE

SPEC_FILE: a JSON file, `{"kind": "export" | "library", "path": ..., "signature": ...,
"sentences": [...], "runs": [[batch_size, callers, count], ...], "intra_op_threads": None
or N, ...}`. `export` loads a SavedModel as TF Serving does (TensorFlow and tensorflow-text
only, no Keras, no keras_attention); `library` loads a folder's `model.keras` and
`tokenizer.model` into the library's `Translator` (beam width, length penalty and chunk
size from the spec). After one warm-up request of 8 sentences, each run sends the first
`count` sentences in requests of `batch_size`, by `callers` threads at once; runs go in the
order given (smallest first, so that what a run leaves allocated is small beside the next
one's peak). Prints one JSON line: the resident memory once loaded and warmed up, the
intra-op threads (0: TensorFlow's default), and per run sentences/s, per-request latency
p50/p99 and the highest resident memory above the run's start (sampled every 5 ms).
"""

import json
import os
import sys
import threading
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def resident_bytes() -> int:
    """This process's resident memory now (Linux `/proc/self/statm`)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakSampler:
    """Samples `resident_bytes` every `interval` seconds in a thread while it is entered."""

    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, resident_bytes())
            time.sleep(self.interval)

    def __enter__(self) -> "PeakSampler":
        self.peak = resident_bytes()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, resident_bytes())


def load_translate(spec: dict):
    """The function that translates a list of sentences, per the spec's kind."""
    import tensorflow as tf

    if spec.get("intra_op_threads"):  # before TensorFlow starts its thread pools
        tf.config.threading.set_intra_op_parallelism_threads(spec["intra_op_threads"])
    if spec["kind"] == "export":
        import tensorflow_text  # noqa: F401 (registers the SentencePiece ops, as TF Serving links them)

        function = tf.saved_model.load(spec["path"]).signatures[spec["signature"]]
        return lambda batch: function(sentences=tf.constant(batch))["translations"].numpy()
    import keras

    import keras_attention  # noqa: F401 (registers the classes that load_model reads)
    from keras_attention.data.tokenizer import SubwordTokenizer
    from keras_attention.serving.translator import Translator

    model = keras.models.load_model(os.path.join(spec["path"], "model.keras"))
    tokenizer = SubwordTokenizer.load(os.path.join(spec["path"], "tokenizer.model"))
    translator = Translator(
        model,
        tokenizer,
        spec["beam_size"],
        spec["alpha"],
        extra_length=spec["extra_length"],
        chunk_size=spec.get("chunk_size"),
    )
    return lambda batch: translator.translate(tf.constant(batch))["translations"].numpy()


def measure_run(translate, sentences: list[str], batch_size: int, callers: int) -> dict:
    """Sends `sentences` in requests of `batch_size` from `callers` threads; the figures."""
    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    latencies, lock = [], threading.Lock()

    def caller() -> None:
        while True:
            with lock:
                if not batches:
                    return
                batch = batches.pop(0)
            start = time.perf_counter()
            translate(batch)
            with lock:
                latencies.append(time.perf_counter() - start)

    before = resident_bytes()
    with PeakSampler() as sampler:
        start = time.perf_counter()
        threads = [threading.Thread(target=caller) for _ in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - start
    return {
        "batch_size": batch_size,
        "callers": callers,
        "sentences": len(sentences),
        "sentences_per_s": len(sentences) / seconds,
        "seconds": seconds,
        "requests": len(latencies),
        "p50_ms": float(np.percentile(latencies, 50) * 1000),
        "p99_ms": float(np.percentile(latencies, 99) * 1000),
        "peak_above_start_mb": (sampler.peak - before) / 2**20,
    }


def measure(spec: dict) -> dict:
    translate = load_translate(spec)
    sentences = spec["sentences"]
    translate(sentences[:8])
    loaded = resident_bytes() / 2**20
    runs = [
        measure_run(translate, sentences[:count], batch_size, callers)
        for batch_size, callers, count in spec["runs"]
    ]
    import tensorflow as tf

    # 0: TensorFlow's default (one thread a core)
    threads = tf.config.threading.get_intra_op_parallelism_threads()
    return {"loaded_mb": loaded, "intra_op_threads": threads, "runs": runs}


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print(json.dumps(measure(json.load(handle))), flush=True)
