"""The benchmarks' peer: an encoder-decoder Transformer built from `keras_hub.layers`.

It is what a keras-hub user writes (as in the keras.io translation examples):
`TokenAndPositionEmbedding` for source and target (learned positions, `mask_zero=True` so that
Keras masks carry the padding), `TransformerEncoder` and `TransformerDecoder` blocks, and a
`Dense` projection to the vocabulary. Its sizes are taken from one of our presets.
"""

import keras
import keras_hub

from keras_attention.models.presets import preset_config


def build_keras_hub_transformer(
    vocabulary_size: int,
    sequence_length: int,
    num_encoder_layers: int = 3,
    num_decoder_layers: int = 3,
    d_model: int = 256,
    num_heads: int = 8,
    intermediate_dim: int = 1024,
    dropout: float = 0.1,
    layer_norm_epsilon: float = 1e-6,
    name: str = "keras_hub_transformer",
) -> keras.Model:
    """A functional encoder-decoder Transformer made of keras-hub layers.

    Differences from our `Transformer` that a keras-hub user gets by default: learned
    position embeddings, separate source and target embeddings and an untied output
    projection (same matmul FLOPs, more parameters), and keras-hub's `dropout` also applies
    to the attention weights (our presets have `attention_dropout=0`).

    Args:
        vocabulary_size: shared source and target vocabulary.
        sequence_length: the longest padded length the position embeddings cover.
        num_encoder_layers: `TransformerEncoder` blocks.
        num_decoder_layers: `TransformerDecoder` blocks.
        d_model: embedding and model width.
        num_heads: attention heads.
        intermediate_dim: feed-forward inner size (`d_ff`).
        dropout: keras-hub's dropout (residual and attention).
        layer_norm_epsilon: epsilon of the layer normalisations (ours is 1e-6).
        name: the model's name.

    Returns:
        An uncompiled `keras.Model` mapping `(source_ids, target_in_ids)`, int
        `(batch, length)` with 0 as padding, to float32 logits `(batch, T, vocabulary_size)`.

    Example:

    >>> peer = build_keras_hub_transformer(vocabulary_size=1000, sequence_length=64)
    >>> peer((np.ones((2, 8), "int32"), np.ones((2, 8), "int32"))).shape
    (2, 8, 1000)
    """
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    target_in = keras.Input(shape=(None,), dtype="int32", name="target_in")

    def embedding(ids, role):
        return keras_hub.layers.TokenAndPositionEmbedding(
            vocabulary_size, sequence_length, d_model, mask_zero=True, name=f"{role}_embedding"
        )(ids)

    block_args = dict(
        intermediate_dim=intermediate_dim,
        num_heads=num_heads,
        dropout=dropout,
        layer_norm_epsilon=layer_norm_epsilon,
    )
    encoded = keras.layers.Dropout(dropout)(embedding(source, "source"))
    for index in range(num_encoder_layers):
        encoded = keras_hub.layers.TransformerEncoder(**block_args, name=f"encoder_{index}")(
            encoded
        )
    decoded = keras.layers.Dropout(dropout)(embedding(target_in, "target"))
    for index in range(num_decoder_layers):
        decoded = keras_hub.layers.TransformerDecoder(**block_args, name=f"decoder_{index}")(
            decoded, encoded
        )
    logits = keras.layers.Dense(vocabulary_size, dtype="float32", name="logits")(decoded)
    return keras.Model((source, target_in), logits, name=name)


def peer_from_preset(
    preset: str, vocabulary_size: int, sequence_length: int, **overrides
) -> keras.Model:
    """The keras-hub peer with the sizes and dropout of our preset `preset`.

    Args:
        preset: one of our presets (`"small"`, ...).
        vocabulary_size: shared source and target vocabulary.
        sequence_length: the longest padded length the position embeddings cover.
        **overrides: preset values replaced, as in `Transformer.from_preset`; only the
            sizes and `dropout` are used.

    Example:

    >>> peer = peer_from_preset("small", vocabulary_size=8000, sequence_length=64)
    """
    config = preset_config(preset, **overrides)
    return build_keras_hub_transformer(
        vocabulary_size,
        sequence_length,
        num_encoder_layers=config["num_encoder_layers"],
        num_decoder_layers=config["num_decoder_layers"],
        d_model=config["d_model"],
        num_heads=config["num_heads"],
        intermediate_dim=config["intermediate_dim"],
        dropout=config["dropout"],
    )
