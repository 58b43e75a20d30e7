"""Corpora, the subword tokenizer and `tf.data` pipelines (TensorFlow-specific).

Its names load on first use (`core.lazy_names`), so that the modules that need only the
standard library (`corpus_files`, `text_files`, `generated_corpus`) load without TensorFlow
and tensorflow-text, which its other modules import.
"""

from keras_attention.core.lazy_names import lazy_names
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID

__getattr__, __dir__, _lazy = lazy_names(
    __name__,
    accumulation=["token_weighted_updates"],
    corpus_shards=["write_sharded_corpus"],
    datasets=["DATASETS", "load_corpus"],
    generated_corpus=["generate_pairs", "generated_splits", "write_corpus"],
    multi30k=["load_multi30k"],
    pipeline=["EncodedPairs", "encode_pairs", "make_batches"],
    recaser=["Recaser"],
    run_batches=["BatchingSpec", "RunData", "run_batches"],
    streaming=["parallel_text", "read_parallel", "stream_batches", "tokenize_pairs"],
    subword_sampling=["count_sampled_batches", "sample_pairs", "sampled_batches"],
    tokenizer=["SubwordTokenizer"],
)
__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", *_lazy]
