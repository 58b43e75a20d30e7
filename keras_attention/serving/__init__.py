"""Serving: a trained translator as TensorFlow Serving and CTranslate2 load it.

- `translator`: the `Translator` (raw sentences in, translations out: tokenizer, search and
  detokenizer in one graph);
- `export`: a `Translator` as a SavedModel for TF Serving, written atomically through a locked
  staging folder; its metadata, and loading it back, naming a damaged file;
- `chunks`: a request of any size decoded in bounded, length-sorted chunks, in the graph;
- `warmup_requests`: TF Serving's warm-up file of an export;
- `ctranslate2_converter`: a model and its tokenizer as a CTranslate2 model.

Import the modules themselves (`from keras_attention.serving.translator import Translator`): this
`__init__` imports none, so that the converter's checks run without TensorFlow.
"""
