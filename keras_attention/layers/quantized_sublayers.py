"""A quantized model saved to `.keras` loads back quantized.

`Model.quantize` changes the dtype policy of each quantized leaf layer (a `Dense` becomes
`int8_from_float32`, with an int8 kernel and a scale). A layer that builds its sub-layers itself
(the attention projections, the feed-forward network) builds them again from its own config
when a `.keras` file is read, as float layers: the file then holds more weights per layer than
the layer has, and loading fails ("Layer 'key' expected 2 variables, but received 3"). Here
the build config (`get_build_config`, which Keras saves beside the config and hands back to
`build_from_config` before the weights are read) also lists the quantized sub-layers' dtype
policies by path; `build_from_config` builds, then quantizes those sub-layers, so that the
weights read next fit them.
"""

import keras

QUANTIZED_KEY = "quantized_sublayers"


def quantized_policies(root: keras.layers.Layer) -> dict[str, dict]:
    """How every quantized sub-layer of `root` was quantized, by its path under `root`
    (`"encoder/block_0/self_attention/query"`): its serialized dtype policy and
    `quantization_config` (`None` for the mode's defaults).

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="out")])
    >>> model.quantize("int8")
    >>> keras.dtype_policies.deserialize(quantized_policies(model)["out"]["dtype_policy"]).name
    'int8_from_float32'
    """
    prefix = f"{root.path}/" if root.path else ""
    policies = {}
    for layer in root._flatten_layers(include_self=False):
        if getattr(layer, "quantization_mode", None) is None or layer.path is None:
            continue
        path = layer.path[len(prefix) :] if layer.path.startswith(prefix) else layer.path
        config = getattr(layer, "quantization_config", None)
        policies[path] = {
            "dtype_policy": keras.dtype_policies.serialize(layer.dtype_policy),
            "quantization_config": keras.saving.serialize_keras_object(config),
        }
    return policies


def quantize_sublayers(root: keras.layers.Layer, policies: dict[str, dict]) -> None:
    """Quantizes the sub-layers of `root` named in `policies` (`quantized_policies`) as they
    were (the weights are then read from the file).

    Raises:
        ValueError: naming a path that is not a sub-layer of `root`.
    """
    prefix = f"{root.path}/" if root.path else ""
    layers = {
        layer.path[len(prefix) :]: layer
        for layer in root._flatten_layers(include_self=False)
        if layer.path is not None and layer.path.startswith(prefix)
    }
    for path, saved in policies.items():
        layer = layers.get(path)
        if layer is None:
            raise ValueError(
                f"{root.name} has no layer {path!r} to quantize (its saved build config "
                f"lists it); its layers: {sorted(layers)[:5]}..."
            )
        if layer.quantization_mode is None:
            policy = keras.dtype_policies.deserialize(saved["dtype_policy"])
            config = keras.saving.deserialize_keras_object(saved["quantization_config"])
            layer.quantize(policy.quantization_mode, type_check=False, config=config)


def with_quantized_sublayers(layer: keras.layers.Layer, build_config: dict | None) -> dict | None:
    """`build_config` (a layer's `get_build_config()`) with the dtype policies of `layer`'s
    quantized sub-layers added, if it has any."""
    policies = quantized_policies(layer)
    if build_config is None or not policies:
        return build_config
    return {**build_config, QUANTIZED_KEY: policies}


def without_quantized_sublayers(build_config: dict | None) -> tuple[dict, dict | None]:
    """`build_config` without the policies `with_quantized_sublayers` added, and those
    policies (`None` if there are none), for `quantize_sublayers` once the layer is built."""
    config = dict(build_config or {})
    return config, config.pop(QUANTIZED_KEY, None)


class QuantizedSublayersMixin:
    """Saves the quantized sub-layers' dtype policies in the build config and quantizes them
    again in `build_from_config` (put it before the Keras class in the bases)."""

    def get_build_config(self):
        return with_quantized_sublayers(self, super().get_build_config())

    def build_from_config(self, config):
        config, policies = without_quantized_sublayers(config)
        super().build_from_config(config)
        if policies:
            quantize_sublayers(self, policies)
