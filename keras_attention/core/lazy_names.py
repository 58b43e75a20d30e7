"""Names of a package imported on first use (PEP 562), so that importing it loads only what
is used: a module's `__getattr__`, `__dir__` and `__all__` from where each name lives. This
module needs only the standard library.
"""

import importlib
import sys
from collections.abc import Callable, Sequence


def lazy_names(
    package: str, **modules: Sequence[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """The `__getattr__`, `__dir__` and `__all__` of a package whose names load on first use.

    Args:
        package: the package's dotted name (its `__name__`).
        **modules: for each module of the package (by its name relative to the package), the
            names it defines that the package offers.

    Returns:
        `(__getattr__, __dir__, __all__)`: the first imports the module of a name on its first
        look-up and keeps the value in the package's namespace, so that the next look-up is
        a plain attribute; a name it does not offer raises `AttributeError` as a module's
        does. The second lists the names loaded and offered; the third, those offered.

    Example, in a package's `__init__.py`: `__getattr__, __dir__, __all__ = lazy_names(
    __name__, strategy=["get_strategy"])`. Here for `keras_attention.distribute`:

    >>> package = "keras_attention.distribute"
    >>> module_getattr, module_dir, names = lazy_names(package, strategy=["get_strategy"])
    >>> names
    ['get_strategy']
    >>> module_getattr("get_strategy").__module__  # imports keras_attention.distribute.strategy
    'keras_attention.distribute.strategy'
    """
    homes = {name: module for module, names in modules.items() for name in names}

    def module_getattr(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def module_dir() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return module_getattr, module_dir, sorted(homes)
