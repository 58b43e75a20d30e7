"""What the command-line tools run before the library: arguments, one-line errors, running.

The tools in `tools/` parse their arguments with this package, then import `keras_attention`
(and so Keras and TensorFlow, several seconds) in `main`, once the arguments parse: `--help`
and an argument error come at once. So importing any module of this package loads neither
`keras_attention` nor Keras nor TensorFlow (`tests/system/test_deferred_import.py` checks it); a
function here that needs the library (the words of a storage failure, UTF-8 input, a
`--model` folder) imports it when called, past the parsing. It is a package of its own
because importing any module of `keras_attention` runs `keras_attention/__init__.py`, which
imports Keras and registers the library's classes.

- `arguments`: `ArgumentParser` (one-line errors, `--verbose`), the argument types, the
  search options, `--model`;
- `errors`: `UserError`, `fail`, `user_errors`, and `run_command`, which runs a tool's work
  (closed pipes, SIGINT and SIGTERM, full disks);
- `files`: the checks of the paths a tool will write, and input text read with errors that
  name the file and line.
"""
