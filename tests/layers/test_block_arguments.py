"""The blocks' and stacks' shared arguments (`layers/block_arguments.py`): keyword-only."""

import pytest

import keras_attention as ka

BLOCKS_AND_STACKS = [
    ka.layers.TransformerEncoderBlock,
    ka.layers.TransformerDecoderBlock,
    ka.layers.TransformerEncoder,
    ka.layers.TransformerDecoder,
]


@pytest.mark.parametrize("layer_class", BLOCKS_AND_STACKS, ids=lambda c: c.__name__)
def test_positional_arguments_are_refused(layer_class):
    """`TransformerEncoderBlock(8, 4)` is keras-hub's `TransformerEncoder(intermediate_dim=8,
    num_heads=4)`: here it fails instead of silently meaning `num_heads=8`."""
    with pytest.raises(TypeError, match="positional argument"):
        layer_class(8, 4)


@pytest.mark.parametrize("layer_class", BLOCKS_AND_STACKS, ids=lambda c: c.__name__)
def test_keywords_in_any_order_give_the_same_config(layer_class):
    stack = {"num_layers": 2} if "Block" not in layer_class.__name__ else {}
    one = layer_class(num_heads=4, intermediate_dim=8, name="one", **stack)
    other = layer_class(intermediate_dim=8, num_heads=4, name="one", **stack)
    assert one.get_config() == other.get_config()
    assert (one.num_heads, one.intermediate_dim) == (4, 8)


@pytest.mark.parametrize("layer_class", BLOCKS_AND_STACKS, ids=lambda c: c.__name__)
def test_num_heads_that_does_not_divide_d_model_is_refused_by_name(layer_class):
    stack = {"num_layers": 2} if "Block" not in layer_class.__name__ else {}
    layer = layer_class(num_heads=3, intermediate_dim=8, **stack)
    with pytest.raises(
        ValueError,
        match="num_heads must divide d_model when key_dim is not given; got num_heads=3, d_model=8",
    ):
        layer.build((2, 5, 8))
