"""Random numbers as a function of counters: the same seed, step, row key and column give
the same number on every backend, in a traced loop, with no generator state to carry.

Keras's random ops take an integer seed or a `SeedGenerator` (a variable, stepped inside a
loop by assignment, which a JAX loop cannot do, and which TensorFlow's random ops cannot be
given as a tensor); a sampler whose samples must be reproducible per sentence, whatever
batch or chunk the sentence is decoded in, needs numbers keyed by the sentence instead.
Here each number is an integer hash (Wellons' `lowbias32`: xor-shifts and two
multiplications, each wrapping at 32 bits) of the counters, in int32 `keras.ops`; the top
24 bits become a float in (0, 1).
"""

from keras import ops

_MULTIPLIERS = (0x7FEB352D, 0x846CA68B - (1 << 32))  # lowbias32's, as signed int32
_SHIFTS = (16, 15, 16)


def _shift_right(x, bits: int):
    """`x >> bits` as if `x` were unsigned (a logical shift of the int32's bits)."""
    return ops.bitwise_and(ops.right_shift(x, bits), (1 << (32 - bits)) - 1)


def hash32(x):
    """lowbias32 of int32 `x` (its bits read as unsigned), elementwise, as int32.

    Example:

    >>> ops.convert_to_numpy(hash32(ops.array([0, 1, 2], "int32")))
    array([         0, 1753845952, -787275391], dtype=int32)
    """
    x = ops.cast(x, "int32")
    for shift, multiplier in zip(_SHIFTS, (*_MULTIPLIERS, None), strict=True):
        x = ops.bitwise_xor(x, _shift_right(x, shift))
        if multiplier is not None:
            x = ops.multiply(x, ops.convert_to_tensor(multiplier, "int32"))
    return x


def combine(first, second):
    """A hash of two int32 counters (broadcast together)."""
    return hash32(ops.bitwise_xor(hash32(first), ops.cast(second, "int32")))


def uniform(row_keys, width: int):
    """Floats in (0, 1), `(rows, width)`: one per row key (int32 `(rows,)`, already combining
    the seed and the step) and column.

    Example:

    >>> u = uniform(ops.array([7, 8], "int32"), 3)
    >>> bool(ops.all(u > 0)) and bool(ops.all(u < 1)), tuple(ops.shape(u))
    (True, (2, 3))
    """
    columns = hash32(ops.arange(width, dtype="int32") + 0x3C6EF372)  # (width,)
    bits = hash32(ops.bitwise_xor(hash32(row_keys)[:, None], columns[None, :]))
    top = ops.cast(_shift_right(bits, 8), "float32")  # 24 bits, exact in float32
    return (top + 0.5) / float(1 << 24)
