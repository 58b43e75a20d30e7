"""Importing Keras and its backend without TensorFlow's start-up lines, for the tools.

TensorFlow's C++ code writes its start-up lines (oneDNN, CUDA probes, CPU features) to the
process's stderr while it is imported, before its logging is set up, so
`TF_CPP_MIN_LOG_LEVEL` does not silence them. The command-line tools set
`KERAS_ATTENTION_QUIET=1` (unless given `--verbose`) once their arguments parse
(`keras_attention_cli.arguments.ArgumentParser`, the one place that sets it), before they
import the package, which then imports Keras with file descriptor 2 pointed at `/dev/null`;
errors raised by the import still reach stderr, with their traceback, once it is restored.
It is an output setting: the package imports the same modules either way.

Library users who do not set the variable get `TF_CPP_MIN_LOG_LEVEL=1` unless they set it
themselves (and only if TensorFlow is not imported yet): it hides TensorFlow's C++ INFO
lines that come once its logging is set up (the CPU instructions it was not built for), and
nothing else. Measured with TensorFlow 2.21 on a CPU machine, the lines written before that
(`WARNING: All log messages before absl::InitializeLog() ...`, oneDNN's note, "Could not
find cuda drivers") still come whatever the level, and so does the ERROR line "failed call
to cuInit" at the first operation on a machine without a GPU, which only level 3 hides;
level 2 hid no more than 1. docs/index.md says how a user hides the rest. This module
needs only the standard library.
"""

import os
import sys

QUIET_VARIABLE = "KERAS_ATTENTION_QUIET"
LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
# TensorFlow's C++ log level without `KERAS_ATTENTION_QUIET`: INFO lines hidden, warnings and
# errors shown.
LIBRARY_LOG_LEVEL = "1"


def import_keras_quietly() -> None:
    """Imports Keras (and so its backend) with stderr silenced when `KERAS_ATTENTION_QUIET`
    is `1` and Keras is not imported yet. Otherwise imports nothing, and sets
    `TF_CPP_MIN_LOG_LEVEL` to `LIBRARY_LOG_LEVEL` if it is unset and TensorFlow is not
    imported yet (see the module's docstring)."""
    if os.environ.get(QUIET_VARIABLE) != "1":
        if "tensorflow" not in sys.modules:
            os.environ.setdefault(LOG_LEVEL_VARIABLE, LIBRARY_LOG_LEVEL)
        return
    if "keras" in sys.modules:
        return
    # 3, not 2: the CUDA probe ("failed call to cuInit") and oneDNN's fallback notes are
    # logged at ERROR level once the first op runs, long after the import.
    os.environ.setdefault(LOG_LEVEL_VARIABLE, "3")
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        import keras  # noqa: F401 (imported for its side effect: the backend is loaded)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
