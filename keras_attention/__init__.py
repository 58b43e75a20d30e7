"""keras_attention: the Transformer of "Attention Is All You Need" for Keras 3.

Importing the package registers every layer, model, loss, metric and schedule with Keras, so
that `keras.models.load_model` can read `.keras` files that use them. With
`KERAS_ATTENTION_QUIET=1` (the command-line tools set it), Keras and TensorFlow are imported
without TensorFlow's start-up lines (`keras_attention.core.quiet_import`).

The command-line tools also set `KERAS_ATTENTION_DEFER_IMPORT=1` before they import the
package: it then loads nothing until `load()` is called, which
`keras_attention.cli.ArgumentParser` does once the arguments parse, or until one of its names
is used. So `--help` and argument errors come at once, not after TensorFlow's few seconds of
start-up. The package removes the variable from the environment as it reads it, so that the
processes a tool starts import the package as usual.
"""

import os

from keras_attention.core.quiet_import import import_keras_quietly

__version__ = "0.1.0"
DEFER_VARIABLE = "KERAS_ATTENTION_DEFER_IMPORT"
_SUBPACKAGES = ["layers", "masks", "models", "training"]
_loading = False  # while `load` runs, unknown names are submodules still to import


def load() -> None:
    """Imports Keras (quietly where `KERAS_ATTENTION_QUIET=1`) and the package's public names,
    registering its classes for `keras.models.load_model`; does nothing once they are
    loaded. Importing the package calls it, unless `KERAS_ATTENTION_DEFER_IMPORT=1`."""
    global _loading
    if "Transformer" in globals() or _loading:
        return
    _loading = True
    try:
        import_keras_quietly()
        # The modules that register classes with Keras: importing them is the registration.
        from keras_attention import layers, masks, models, training  # noqa: F401
        from keras_attention.distribute import replica_dropout  # noqa: F401 (old files' layer)
        from keras_attention.models.transformer import Transformer

        names = globals()
        names.update({name: getattr(layers, name) for name in layers.__all__})
        names["__all__"] = ["Transformer", *_SUBPACKAGES, *layers.__all__]
        names["Transformer"] = Transformer  # last: it marks the package as loaded
    finally:
        _loading = False


def __getattr__(name: str) -> object:
    """A name of a package whose import was deferred: loads the package first (PEP 562)."""
    if _loading or (name.startswith("__") and name != "__all__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    load()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    load()
    return sorted(globals())


if os.environ.pop(DEFER_VARIABLE, "") != "1":
    load()
