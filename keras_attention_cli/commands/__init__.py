"""The command-line tools, one module each, with `main(argv=None) -> int`.

Each module is a console script (`keras-attention-<tool>`, setup.cfg) and is run by the thin
wrapper `tools/<tool>.py`: `train`, `translate`, `evaluate`, `export`, `average_checkpoints`,
`convert_ctranslate2`, `make_corpus_shards`. A module parses its arguments with
`keras_attention_cli.arguments` and imports `keras_attention` (Keras, TensorFlow) only in its
`main`, once they parse: importing it loads neither.

Conventions, the same in every tool: the run folder is `--run-dir`, the tool's product (a
file or a folder) is `--output`; the older spellings still work, with one deprecation line on
stderr (`keras_attention_cli.old_spellings`). Every option has a help text. Long work shows
its progress on stderr at a terminal only (`keras_attention.core.progress`).
"""
