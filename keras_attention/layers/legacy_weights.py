"""Weights saved before the attention projections were `Dense` layers load as they are.

Until issue 36 a `MultiHeadAttention` kept its projections in `EinsumDense` layers with
kernels `(d, heads, head_dim)` (query, key, value; biases `(heads, head_dim)`) and
`(heads, head_dim, d_out)` (output). They are now `Dense` layers on the flattened heads:
kernels `(d, heads * head_dim)` and `(heads * head_dim, d_out)`, biases `(heads * head_dim,)`
and `(d_out,)`. Both layouts list the same numbers in the same (row-major) order, so an old
weight becomes a new one by a reshape, done once as it is read. Old checkpoints, run folders
and `.keras` files therefore load with no conversion step (`ProjectionDense.load_own_variables`
for the weights, `legacy_layout` for the checks that compare a file's shapes with a model's).
"""

import math
import re

import keras
import numpy as np

# The path in a `.weights.h5` file of a projection's weights: `.../query_dense/vars/0`.
_PROJECTION_WEIGHT = re.compile(r"(^|/)(query|key|value|output)_dense/vars/\d+$")


def legacy_value(value, shape: tuple[int, ...], name: str) -> np.ndarray:
    """`value` (a weight as read from a file) reshaped to `shape` when it is the same weight in
    the old `EinsumDense` layout; returned unchanged when it already has `shape`.

    Args:
        value: an array-like with `.shape` (an h5py dataset, a NumPy array).
        shape: the shape of the variable it is loaded into.
        name: the variable's path, for the error message.

    Raises:
        ValueError: naming `name` if `value` has another number of elements.

    Example:

    >>> legacy_value(np.zeros((16, 2, 8)), (16, 16), "query_dense/kernel").shape
    (16, 16)
    """
    shape = tuple(shape)
    if tuple(value.shape) == shape:
        return value
    if math.prod(value.shape) != math.prod(shape):
        raise ValueError(
            f"cannot load {name}: the file holds shape {tuple(value.shape)}, which is neither "
            f"{shape} nor its old multi-head layout (same number of elements)"
        )
    return np.reshape(np.asarray(value), shape)


def legacy_layout(
    found: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]]
) -> dict[str, tuple[int, ...]]:
    """`found` (the shapes in a weights file, by path) with every attention projection weight
    of the old layout given the shape it loads as (`expected`'s), so that an old file's
    layout compares equal to a new model's.

    Example:

    >>> legacy_layout({"a/query_dense/vars/1": (2, 8)}, {"a/query_dense/vars/1": (16,)})
    {'a/query_dense/vars/1': (16,)}
    """
    mapped = {}
    for name, shape in found.items():
        want = expected.get(name)
        if (
            want is not None
            and _PROJECTION_WEIGHT.search(name)
            and math.prod(shape) == math.prod(want)
        ):
            shape = tuple(want)
        mapped[name] = shape
    return mapped


class _ReshapingStore:
    """A read view of a Keras variable store whose entries come back in the shapes given."""

    def __init__(self, store, shapes: list[tuple[int, ...]], layer_name: str):
        self._store = store
        self._shapes = shapes
        self._layer_name = layer_name

    def __getitem__(self, key: str):
        value = self._store[key]
        index = int(key)
        if index >= len(self._shapes):
            return value
        return legacy_value(value, self._shapes[index], f"{self._layer_name} weight {key}")

    def __len__(self) -> int:
        return len(self._store)

    def keys(self):
        return self._store.keys()


@keras.saving.register_keras_serializable(package="keras_attention")
class ProjectionDense(keras.layers.Dense):
    """`keras.layers.Dense` that also reads its kernel and bias in the old multi-head layout.

    Only the loading differs from `Dense`: calls, LoRA (`enable_lora`) and every quantization
    mode are `Dense`'s own (`quantize` skips `Dense`'s refusal of subclasses, which guards
    against a subclass with another computation; this one has none).

    Example:

    >>> dense = ProjectionDense(16)
    >>> dense.build((None, None, 16))
    >>> dense.quantize("int8")
    >>> dense.quantization_mode
    'int8'
    """

    def quantize(self, mode=None, type_check=True, config=None):
        super().quantize(mode, type_check=False, config=config)

    def load_own_variables(self, store):
        if self.built and self.quantization_mode is None:
            shapes = [tuple(self._kernel.shape)]
            if self.bias is not None:
                shapes.append(tuple(self.bias.shape))
            store = _ReshapingStore(store, shapes, self.path)
        super().load_own_variables(store)


def reshape_optimizer_state_on_load(optimizer: keras.optimizers.Optimizer) -> None:
    """Makes `optimizer` read its saved state (a `.keras` file of a compiled model: Adam's
    moments, one per kernel, in the kernels' shapes) in the old projection layout too.

    The optimizer's variables follow the model's, so a moment of an old 3-D kernel is read
    as the new kernel's shape; no other variable changes shape.
    """
    if getattr(optimizer, "_reads_legacy_state", False):
        return
    load = optimizer.load_own_variables

    def load_own_variables(store):
        shapes = [tuple(variable.shape) for variable in optimizer.variables]
        load(_ReshapingStore(store, shapes, optimizer.name))

    optimizer.load_own_variables = load_own_variables
    optimizer._reads_legacy_state = True


def read_old_optimizer_state(model: keras.Model) -> None:
    """Makes `model`'s optimizer, if it has one, read saved state in the old projection
    layout too (`reshape_optimizer_state_on_load`). `Transformer` calls it in
    `compile_from_config`, which Keras runs before reading a `.keras` file's optimizer state,
    and in `load_weights` (a checkpoint loaded into a compiled model, e.g. on resuming)."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        reshape_optimizer_state_on_load(optimizer)
