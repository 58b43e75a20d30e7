"""`core.quiet_import` without `KERAS_ATTENTION_QUIET`: importing the package in plain Python
hides TensorFlow's C++ INFO lines unless the user set `TF_CPP_MIN_LOG_LEVEL`, and nothing
more (the tools' quiet import: tests/system/test_deferred_import.py)."""

import os
import subprocess
import sys

from keras_attention.core.quiet_import import (
    LIBRARY_LOG_LEVEL,
    LOG_LEVEL_VARIABLE,
    QUIET_VARIABLE,
    import_keras_quietly,
)


def test_the_log_level_is_set_only_if_unset_and_before_tensorflow_loads(monkeypatch):
    monkeypatch.delenv(QUIET_VARIABLE, raising=False)
    monkeypatch.delenv(LOG_LEVEL_VARIABLE, raising=False)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)  # put back afterwards
    import_keras_quietly()
    assert os.environ[LOG_LEVEL_VARIABLE] == LIBRARY_LOG_LEVEL == "1"
    monkeypatch.setenv(LOG_LEVEL_VARIABLE, "0")  # the user's own level wins
    import_keras_quietly()
    assert os.environ[LOG_LEVEL_VARIABLE] == "0"
    # TensorFlow already loaded has read its level: it is left as it is.
    monkeypatch.delenv(LOG_LEVEL_VARIABLE)
    monkeypatch.setitem(sys.modules, "tensorflow", sys)
    import_keras_quietly()
    assert LOG_LEVEL_VARIABLE not in os.environ


def test_plain_import_hides_tensorflows_info_lines_but_not_errors():
    env = {k: v for k, v in os.environ.items() if k not in (LOG_LEVEL_VARIABLE, QUIET_VARIABLE)}
    code = "import os, keras_attention; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "1\n"
    # The CPU-instructions note, an INFO line logged once logging is set up, is hidden.
    assert "cpu_feature_guard" not in done.stderr and "rebuild TensorFlow" not in done.stderr
    # An error raised while the package imports still shows, with its traceback.
    failing = "import sys; sys.modules['keras'] = None; import keras_attention"
    done = subprocess.run([sys.executable, "-c", failing], capture_output=True, text=True,
                          env=env, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 1 and "Traceback" in done.stderr
    assert "ModuleNotFoundError: import of keras halted" in done.stderr
