"""LoRA (Hu et al., 2021) on a model's projections, with keras-hub's names and files.

`enable_lora(model, rank)` freezes every weight of the model (biases included), then gives
the `Dense` layers named in `target_names` (by default keras-hub's: the attention's query
and value projections) Keras's own LoRA (`keras.layers.Dense.enable_lora`: trainable `lora_kernel_a`
`(in, rank)` and `lora_kernel_b` `(rank, out)`, `b` starting at zero, so the model's outputs
do not change until it trains). `save_lora_weights` writes only those two kernels per layer,
as an HDF5 file named `*.lora.h5` (keras-hub's rule), built in memory and written
atomically; `load_lora_weights` reads them back into a model with the same LoRA layers.

A LoRA model's `.keras` and `.weights.h5` files hold the merged kernels (`W + a @ b *
alpha / rank`: Keras's `Dense.save_own_variables`), so a model loaded from them has no LoRA
left; `models.dtype_copy.copy_with_dtype` makes such a plain copy in memory, which is what
an export writes (no LoRA ops in the SavedModel).
"""

import io
import os
from pathlib import Path

import h5py
import keras
import numpy as np

from keras_attention.core.atomic_files import write_bytes_atomically
from keras_attention.core.checks import check_positive_int
from keras_attention.core.file_checks import CorruptFileError

# keras-hub's `Backbone.enable_lora` default targets, as this library names them: the
# attention's query and value projections (keras-hub also lists "query_dense" and
# "value_dense", its own layers' names).
DEFAULT_TARGET_NAMES = ("query", "value")
LORA_SUFFIX = ".lora.h5"


def dense_layers(model) -> dict[str, keras.layers.Dense]:
    """Every built `Dense` layer under `model`, by its path below the model (without the
    model's own name, which another instance in the process does not share)."""
    found = {}
    prefix = model.path + "/"
    for layer in model._flatten_layers(include_self=False):
        if isinstance(layer, keras.layers.Dense) and layer.built:
            path = layer.path
            found[path[len(prefix) :] if path.startswith(prefix) else path] = layer
    return found


def lora_layers(model) -> dict[str, keras.layers.Dense]:
    """The LoRA-enabled `Dense` layers of `model`, by path."""
    return {path: layer for path, layer in dense_layers(model).items() if layer.lora_enabled}


def enable_lora(
    model,
    rank: int,
    target_names: tuple[str, ...] | list[str] | None = None,
    lora_alpha: float | None = None,
) -> list[str]:
    """Freezes `model`'s weights and enables LoRA on its `Dense` layers named `target_names`.

    Args:
        model: a built model (a `Transformer`, or any Keras model of `Dense` layers).
        rank: the rank of the low-rank update.
        target_names: the layer names to adapt (a layer's own name, such as `"query"`, not
            its path); default `DEFAULT_TARGET_NAMES`, keras-hub's query and value.
        lora_alpha: the update's scale is `lora_alpha / rank`; default `rank` (scale 1).

    Returns:
        The paths of the adapted layers.

    Raises:
        ValueError: if the model is not built, `rank` is not a positive integer, LoRA is
            already enabled, or no layer has one of the names (the names it has are listed).
    """
    check_positive_int("rank", rank)
    if not model.built:
        raise ValueError("enable_lora needs a built model: call model.build() first")
    if lora_layers(model):
        raise ValueError("LoRA is already enabled on this model; it can be enabled once")
    names = tuple(DEFAULT_TARGET_NAMES if target_names is None else target_names)
    layers = dense_layers(model)
    targets = {path: layer for path, layer in layers.items() if layer.name in names}
    if not targets:
        known = sorted({layer.name for layer in layers.values()})
        raise ValueError(f"target_names={list(names)} names no Dense layer; its names: {known}")
    model.trainable = True
    for layer in model._flatten_layers(include_self=False):
        layer.trainable = False
    for layer in targets.values():
        layer.trainable = True
        layer.enable_lora(rank, lora_alpha=lora_alpha)
        if layer.bias is not None:
            # keras-hub's leaves it trainable; here only the LoRA kernels train, so that
            # the LoRA file holds every weight that changed.
            layer.bias.trainable = False
    return sorted(targets)


def lora_weights_bytes(model) -> bytes:
    """The bytes of `model`'s LoRA file: per adapted layer, its kernels `a` and `b`."""
    layers = lora_layers(model)
    if not layers:
        raise ValueError("the model has no LoRA weights: call enable_lora(rank) first")
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as file:
        first = next(iter(layers.values()))
        file.attrs["rank"] = first.lora_rank
        file.attrs["lora_alpha"] = first.lora_alpha
        for path, layer in layers.items():
            group = file.create_group(path)
            group["lora_kernel_a"] = keras.ops.convert_to_numpy(layer.lora_kernel_a)
            group["lora_kernel_b"] = keras.ops.convert_to_numpy(layer.lora_kernel_b)
    return buffer.getvalue()


def check_lora_path(filepath: str | os.PathLike) -> None:
    """Raises `ValueError` unless `filepath` ends with `.lora.h5` (keras-hub's rule)."""
    if not str(filepath).endswith(LORA_SUFFIX):
        raise ValueError(f"a LoRA weights file must end with {LORA_SUFFIX}; got {filepath}")


def save_lora_weights(model, filepath: str | os.PathLike) -> Path:
    """Writes `model`'s LoRA kernels (nothing else) to `filepath`, atomically.

    Raises:
        ValueError: if the name does not end with `.lora.h5` or the model has no LoRA.
        OSError: naming the file if it cannot be written (an old file is then kept).
    """
    check_lora_path(filepath)
    return write_bytes_atomically(filepath, lora_weights_bytes(model))


def load_lora_weights(model, filepath: str | os.PathLike) -> None:
    """Reads a LoRA file into `model`, whose LoRA must be enabled on the same layers with the
    same rank (`enable_lora(model, rank, target_names)`).

    Raises:
        ValueError: if the name does not end with `.lora.h5`, the model has no LoRA, or the
            file's layers, rank or shapes differ from the model's (naming them).
        CorruptFileError: if the file is not a readable LoRA file.
        FileNotFoundError: if it does not exist.
    """
    check_lora_path(filepath)
    layers = lora_layers(model)
    if not layers:
        raise ValueError("load_lora_weights: enable LoRA on the model first (enable_lora)")
    if not Path(filepath).is_file():
        raise FileNotFoundError(f"no LoRA weights file {filepath}")
    try:
        with h5py.File(filepath, "r") as file:
            stored = {}
            file.visititems(
                lambda name, item: (
                    stored.__setitem__(name, item)
                    if isinstance(item, h5py.Group) and "lora_kernel_a" in item
                    else None
                )
            )
            if set(stored) != set(layers):
                missing = sorted(set(layers) - set(stored))
                extra = sorted(set(stored) - set(layers))
                raise ValueError(
                    f"{filepath} does not fit the model's LoRA layers: missing {missing}, "
                    f"not in the model {extra}"
                )
            values = {
                path: (np.asarray(group["lora_kernel_a"]), np.asarray(group["lora_kernel_b"]))
                for path, group in stored.items()
            }
    except (OSError, KeyError) as error:
        message = f"{filepath} is not a readable LoRA weights file: {error}"
        raise CorruptFileError(message) from error
    for path, (a, b) in values.items():
        layer = layers[path]
        if a.shape != tuple(layer.lora_kernel_a.shape) or b.shape != tuple(
            layer.lora_kernel_b.shape
        ):
            raise ValueError(
                f"{filepath}: {path} has LoRA kernels {a.shape} and {b.shape}, the model "
                f"{tuple(layer.lora_kernel_a.shape)} and {tuple(layer.lora_kernel_b.shape)} "
                "(another rank or model size)"
            )
    for path, (a, b) in values.items():
        layers[path].lora_kernel_a.assign(a)
        layers[path].lora_kernel_b.assign(b)
