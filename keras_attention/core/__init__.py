"""The bottom of the package: what every other part may use and which uses none of them.

- `special_tokens`: the ids of padding, unknown, BOS and EOS;
- `checks`: argument checks whose errors name the argument and its value;
- `sequence_buffer`: writing positions into fixed-size buffers (caches, token buffers);
- `atomic_files`: writing files so that a kill never leaves a partial one;
- `literal_paths`: a path that TensorFlow's checkpoint readers read as itself, not as a glob;
- `file_checks`: reading files back checked (`CorruptFileError` naming a damaged one, JSON
  fields against type annotations, file digests);
- `quiet_import`: importing Keras without TensorFlow's start-up lines (for the tools);
- `lazy_names`: a package's names imported on first use (PEP 562), the package's one lazy
  import: `data/`, `runs/` and `distribute/` use it.

These modules import only the standard library, numpy and keras, and this `__init__` imports
none of them, so that `quiet_import` runs before Keras is loaded.
"""
