"""Corpora, the subword tokenizer and `tf.data` pipelines (TensorFlow-specific)."""

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from keras_attention.data.accumulation import token_weighted_updates
from keras_attention.data.corpus_shards import write_sharded_corpus
from keras_attention.data.datasets import DATASETS, load_corpus
from keras_attention.data.generated_corpus import generate_pairs, generated_splits, write_corpus
from keras_attention.data.multi30k import load_multi30k
from keras_attention.data.pipeline import EncodedPairs, encode_pairs, make_batches
from keras_attention.data.recaser import Recaser
from keras_attention.data.streaming import (
    parallel_text,
    read_parallel,
    stream_batches,
    tokenize_pairs,
)
from keras_attention.data.subword_sampling import (
    count_sampled_batches,
    sample_pairs,
    sampled_batches,
)
from keras_attention.data.tokenizer import SubwordTokenizer

__all__ = [
    "BOS_ID",
    "DATASETS",
    "EOS_ID",
    "PAD_ID",
    "UNK_ID",
    "EncodedPairs",
    "Recaser",
    "SubwordTokenizer",
    "count_sampled_batches",
    "encode_pairs",
    "generate_pairs",
    "generated_splits",
    "load_corpus",
    "load_multi30k",
    "make_batches",
    "parallel_text",
    "read_parallel",
    "sample_pairs",
    "sampled_batches",
    "stream_batches",
    "token_weighted_updates",
    "tokenize_pairs",
    "write_corpus",
    "write_sharded_corpus",
]
