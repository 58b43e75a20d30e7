"""Argument checks, one home for the whole package: each error names the argument and its
value. An integer is any `numbers.Integral` (numpy's too) but not a `bool`."""

import numbers


def is_integer(value) -> bool:
    """Whether `value` is an integer (a `numbers.Integral` that is not a `bool`)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_positive_int(name: str, value, allow_none: bool = False) -> None:
    """Raises `ValueError` unless `value` is a positive integer (or `None` when allowed)."""
    if value is None and allow_none:
        return
    if not is_integer(value) or value <= 0:
        raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")


def check_int_at_least(name: str, value, minimum: int) -> None:
    """Raises `ValueError` unless `value` is an integer `>= minimum`."""
    if not is_integer(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {name}={value!r}")


def check_rate(name: str, value) -> None:
    """Raises `ValueError` unless `0 <= value < 1` (a dropout rate)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a float in [0, 1); got {name}={value!r}")


def check_positive_float(name: str, value) -> None:
    """Raises `ValueError` unless `value` is a number greater than 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number > 0; got {name}={value!r}")
