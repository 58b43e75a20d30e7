"""The package's version: the one place it is written.

`setup.cfg` reads it (`version = attr: keras_attention.version.__version__`, without importing
the package) and `keras_attention.__version__` is this value.

>>> import keras_attention
>>> keras_attention.__version__ == __version__
True
"""

__version__ = "0.2.0"
