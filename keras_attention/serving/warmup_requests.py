"""TF Serving's warm-up requests: `assets.extra/tf_serving_warmup_requests` in a SavedModel.

TF Serving replays the records of that file (a TFRecord file of `PredictionLog` protos) when
it loads a version, before the version takes traffic, so that the first user request does not
pay for graph optimisation and the first run of every kernel. TF Serving reads at most 1,000
records; a few small requests per signature are enough here, since the graph takes batches of
any size and length.
"""

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import tensorflow as tf

WARMUP_FILE = Path("assets.extra") / "tf_serving_warmup_requests"
# TF Serving replays at most this many records.
MAX_WARMUP_RECORDS = 1000
# Sentences of the export's warm-up requests when the exporter gives none.
DEFAULT_WARMUP_SENTENCES = (
    "A man rides a bike down the street.",
    "Two dogs play in the snow.",
    "A woman in a red coat is reading a book on a bench.",
    "Children are playing football in a park while their parents watch.",
)


def warmup_batches(sentences: Sequence[str]) -> list[list[str]]:
    """The batches of the warm-up requests: the first sentence alone, then all of them."""
    sentences = list(sentences)
    return [sentences[:1], sentences] if len(sentences) > 1 else [sentences]


def check_warmup_sentences(sentences: Sequence[str]) -> None:
    """Raises `ValueError` unless `sentences` is a non-empty list of non-blank strings."""
    if isinstance(sentences, str | bytes) or not len(sentences):
        raise ValueError(f"warmup_sentences must be a non-empty list of strings; got {sentences!r}")
    for sentence in sentences:
        if not isinstance(sentence, str) or not sentence.strip():
            raise ValueError(f"warmup_sentences must be non-blank strings; got {sentence!r}")


def write_warmup_requests(
    saved_model_dir: str | os.PathLike,
    signature_names: Sequence[str],
    sentences: Sequence[str],
    model_name: str = "translator",
    other_inputs: Mapping[str, Callable[[list[str]], dict]] | None = None,
) -> Path:
    """Writes the warm-up requests of `saved_model_dir`: for each signature, the batches of
    `warmup_batches(sentences)` as Predict requests.

    Args:
        saved_model_dir: the SavedModel's folder (the file goes to its `assets.extra/`).
        signature_names: the signatures to warm up.
        sentences: the sentences of the requests (at least one, none empty).
        model_name: the `model_spec.name` of the requests (TF Serving ignores it in warm-up).
        other_inputs: for a signature that takes more than `sentences`, a function of a
            batch giving its other inputs (`{name: value}`, values that
            `tf.make_tensor_proto` takes).

    Returns:
        The path of the file written.

    Raises:
        ValueError: if `sentences` is empty or holds an empty or non-string sentence, or the
            requests would be more than TF Serving replays.
    """
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    check_warmup_sentences(sentences)
    batches = warmup_batches(sentences)
    if len(batches) * len(signature_names) > MAX_WARMUP_RECORDS:
        raise ValueError(f"TF Serving replays at most {MAX_WARMUP_RECORDS} warm-up requests")
    path = Path(saved_model_dir) / WARMUP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for name in signature_names:
            for batch in batches:
                request = predict_pb2.PredictRequest(
                    model_spec=model_pb2.ModelSpec(name=model_name, signature_name=name)
                )
                request.inputs["sentences"].CopyFrom(tf.make_tensor_proto(batch, tf.string))
                extra = (other_inputs or {}).get(name)
                for input_name, value in (extra(batch) if extra else {}).items():
                    request.inputs[input_name].CopyFrom(tf.make_tensor_proto(value))
                log = prediction_log_pb2.PredictionLog(
                    predict_log=prediction_log_pb2.PredictLog(request=request)
                )
                writer.write(log.SerializeToString())
    return path


def read_warmup_requests(saved_model_dir: str | os.PathLike) -> list:
    """The `PredictRequest`s of a SavedModel's warm-up file, in order, parsed as TF Serving
    parses them (raises if a record is not a `PredictionLog` with a Predict request)."""
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    path = Path(saved_model_dir) / WARMUP_FILE
    for record in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        log = prediction_log_pb2.PredictionLog.FromString(record)
        if log.WhichOneof("log_type") != "predict_log":
            raise ValueError(f"{path}: a record is not a Predict request")
        requests.append(log.predict_log.request)
    return requests
