"""The encoder-decoder Transformer (Section 3) as a subclassed `keras.Model`."""

import contextlib
import os
import warnings
from pathlib import Path
from typing import NamedTuple

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers import PositionalEmbedding, TransformerDecoder, TransformerEncoder
from keras_attention.layers.legacy_weights import read_old_optimizer_state
from keras_attention.layers.quantized_sublayers import (
    quantize_sublayers,
    with_quantized_sublayers,
    without_quantized_sublayers,
)
from keras_attention.models import lora, model_sizes
from keras_attention.models.deferred_collection import deferred_garbage_collection

# Measured with `tools/benchmark.py decode --engines-only` and side by side in one process
# (`Transformer.quantize`'s docstring gives the run).
DYNAMIC_INT8_WARNING = (
    "int8 with quantized activations (weight_only=False) decodes at about half float32's "
    "speed on CPU in TensorFlow (trained Multi30k model, beam 4: 48.0 against 109.5 "
    "sentences/s; weight-only int8 100.4, float32's speed within noise); int8 does not make "
    "decoding faster here: quantize with weight_only=True for smaller kernels at float32's "
    "speed, or use the CTranslate2 converter's int8 for speed"
)


@keras.saving.register_keras_serializable(package="keras_attention")
class Transformer(keras.Model):
    """The Transformer of "Attention Is All You Need", Section 3 (Figure 1).

    Token ids in, next-token logits out: `call((source_ids, target_in_ids))`. Id 0 is padding
    everywhere. By default source and target share one vocabulary and one embedding matrix,
    which is also the pre-softmax projection (Section 3.4).

    A plain `keras.Model`: what training under a `tf.distribute` strategy needs beyond Keras
    (per-replica dropout masks, the multi-worker `fit` fix) is applied to a model instance by
    `keras_attention.distribute.enable_strategy_fixes`, which a training run calls.

    The sizes are checked before anything is made (a size read from a file must not
    allocate without bound): each an integer from 1 to its limit in
    `keras_attention.models.model_sizes.SIZE_LIMITS`, the whole at most
    `model_sizes.MAX_PARAMETERS` parameters; a `ValueError` names the argument.

    Args:
        vocabulary_size: size of the (shared, or source) vocabulary.
        target_vocabulary_size: size of the target vocabulary when it differs from the
            source's; requires `share_embeddings=False`.
        num_encoder_layers: number of encoder blocks (`N`).
        num_decoder_layers: number of decoder blocks (`N`).
        d_model: model width.
        num_heads: attention heads.
        intermediate_dim: feed-forward inner size (`d_ff`).
        dropout: residual and embedding dropout (`P_drop`).
        attention_dropout: dropout on attention weights.
        activation_dropout: dropout on the feed-forward inner activation.
        norm_first: pre-LN instead of the paper's post-LN.
        layer_norm_epsilon: epsilon of the layer normalisations.
        share_embeddings: one embedding matrix for source and target tokens.
        tie_output_embeddings: the target embedding matrix is also the pre-softmax projection.
        max_wavelength: base of the sinusoidal positional encoding.
        key_dim: size of each attention head's queries, keys and values (`d_k = d_v`);
            defaults to `d_model // num_heads` (Table 3's row B varies it).
        attention_scale: multiplier of the attention logits; defaults to the paper's
            `1 / sqrt(d_k)` (Section 3.2.1); `1.0` leaves them unscaled.
        scale_embeddings: multiply the embeddings by `sqrt(d_model)` (Section 3.4).
        max_positions: `None` for sinusoidal positions (Section 3.5); a number for learned
            positional embeddings of that many positions (Table 3's row E), which must exceed
            the longest output a search writes.
        **kwargs: standard `keras.Model` arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a tuple `(source_ids, target_in_ids)` of int tensors `(batch, S)` and
            `(batch, T)`, or a dict with keys `"source"` and `"target_in"`.
        training: whether dropout is active.

    Returns:
        float32 logits `(batch, T, target_vocabulary_size)`.

    Example:

    >>> model = Transformer.from_preset("tiny", vocabulary_size=1000)
    >>> logits = model((np.array([[5, 6, 3]]), np.array([[2, 7]])))  # source, BOS + target
    >>> keras.ops.shape(logits)
    (1, 2, 1000)
    """

    def __init__(
        self,
        vocabulary_size: int,
        target_vocabulary_size: int | None = None,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        d_model: int = 512,
        num_heads: int = 8,
        intermediate_dim: int = 2048,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        norm_first: bool = False,
        layer_norm_epsilon: float = 1e-6,
        share_embeddings: bool = True,
        tie_output_embeddings: bool = True,
        max_wavelength: float = 10000.0,
        key_dim: int | None = None,
        attention_scale: float | None = None,
        scale_embeddings: bool = True,
        max_positions: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        sizes = dict(
            vocabulary_size=vocabulary_size,
            target_vocabulary_size=target_vocabulary_size,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            d_model=d_model,
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            key_dim=key_dim,
            max_positions=max_positions,
        )
        # Before anything is made: a size read from a file must not allocate (issue 53).
        model_sizes.check_sizes(sizes)
        if share_embeddings and target_vocabulary_size not in (None, vocabulary_size):
            raise ValueError(
                "share_embeddings=True needs one vocabulary; got vocabulary_size="
                f"{vocabulary_size}, target_vocabulary_size={target_vocabulary_size}"
            )
        if key_dim is None and d_model % num_heads:
            raise ValueError(
                "num_heads must divide d_model when key_dim is not given; got "
                f"num_heads={num_heads}, d_model={d_model}"
            )
        model_sizes.check_parameter_count(
            {**sizes, "share_embeddings": share_embeddings, "norm_first": norm_first,
             "tie_output_embeddings": tie_output_embeddings}
        )  # fmt: skip
        self.vocabulary_size = vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.d_model = d_model
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation_dropout = activation_dropout
        self.norm_first = norm_first
        self.layer_norm_epsilon = layer_norm_epsilon
        self.share_embeddings = share_embeddings
        self.tie_output_embeddings = tie_output_embeddings
        self.max_wavelength = max_wavelength
        self.key_dim = key_dim
        self.attention_scale = attention_scale
        self.scale_embeddings = scale_embeddings
        self.max_positions = max_positions

        policy = self.dtype_policy
        embedding_args = dict(
            d_model=d_model,
            dropout=dropout,
            max_wavelength=max_wavelength,
            scale_embeddings=scale_embeddings,
            max_positions=max_positions,
            dtype=policy,
        )
        self.target_embedding = PositionalEmbedding(
            self.output_vocabulary_size,
            tie_weights=tie_output_embeddings,
            name="target_embedding" if not share_embeddings else "shared_embedding",
            **embedding_args,
        )
        self.source_embedding = (
            self.target_embedding
            if share_embeddings
            else PositionalEmbedding(vocabulary_size, name="source_embedding", **embedding_args)
        )
        block_args = dict(
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            key_dim=key_dim,
            attention_scale=attention_scale,
            dropout=dropout,
            attention_dropout=attention_dropout,
            activation_dropout=activation_dropout,
            norm_first=norm_first,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=policy,
        )
        self.encoder = TransformerEncoder(
            num_layers=num_encoder_layers, name="encoder", **block_args
        )
        self.decoder = TransformerDecoder(
            num_layers=num_decoder_layers, name="decoder", **block_args
        )

    @property
    def output_vocabulary_size(self) -> int:
        """The size of the target vocabulary (the logits' last dimension)."""
        return self.target_vocabulary_size or self.vocabulary_size

    @classmethod
    def from_preset(
        cls,
        preset: str | os.PathLike,
        vocabulary_size: int | None = None,
        **overrides,
    ) -> "Transformer":
        """A model from a size name, or a trained one from a run folder or a preset folder.

        Like keras-hub's `from_preset` (see `keras_attention.models.preset_sources`):

        - a size name (`"tiny"`, `"small"`, `"base"`, `"big"`) makes an untrained model,
          which needs `vocabulary_size`;
        - a run folder written by `tools/train.py` gives its trained model: `model.keras`
          once the run has finished, else its last epoch checkpoint (rebuilt from
          `config.json`);
        - a preset folder written by `save_to_preset` gives its model and weights.

        A trained model loads on every backend (its tokenizer is not loaded).

        Args:
            preset: a size name, or the path of a run folder or a preset folder.
            vocabulary_size: the vocabulary size of an untrained model; leave it out for a
                folder (or give the trained model's).
            **overrides: constructor arguments that replace the preset's (e.g.
                `dropout=0.2`); for a trained model the weights must still fit.

        Returns:
            The model; built and holding the trained weights for a folder.

        Raises:
            ValueError: for a size name without `vocabulary_size`; naming `preset` if it is
                neither a size name nor an existing path, or a folder that is neither a run's
                nor a preset's; naming a corrupt file.
            FileNotFoundError: naming a file the folder lacks.

        Example:

        >>> model = Transformer.from_preset("small", vocabulary_size=8000, dropout=0.2)
        >>> model.d_model, model.built
        (256, False)
        >>> trained = Transformer.from_preset("runs/translator")  # a run of tools/train.py
        >>> trained.d_model, trained.built
        (16, True)
        """
        from keras_attention.models.preset_sources import load_model

        return load_model(cls, preset, vocabulary_size, **overrides)

    def save_to_preset(
        self,
        preset_dir: str | os.PathLike,
        tokenizer=None,
        **metadata,
    ) -> Path:
        """Writes the model as a preset folder in keras-hub's layout (`config.json`,
        `model.weights.h5`, `metadata.json`, `assets/tokenizer/`), atomically; see
        `keras_attention.models.preset_folder.save_to_preset`.

        Args:
            preset_dir: the folder to create (it must not exist, or be empty).
            tokenizer: the model's `SubwordTokenizer`, which `Translator.from_preset` needs.
            **metadata: `beam_size`, `alpha`, `source_language`, `target_language`, kept in
                `metadata.json`.

        Returns:
            The path of the preset folder.

        Raises:
            FileExistsError: if `preset_dir` exists and is not an empty folder.

        Example:

        >>> from keras_attention.runs.train import load_run
        >>> model, tokenizer = load_run("runs/translator")
        >>> model.save_to_preset("presets/en-de", tokenizer, beam_size=4, alpha=0.6)
        PosixPath('presets/en-de')
        >>> model = Transformer.from_preset("presets/en-de")
        """
        from keras_attention.models.preset_folder import save_to_preset

        if not self.built:
            self.build()
        return save_to_preset(self, preset_dir, tokenizer, **metadata)

    def build(self, input_shape=None):
        batch = None
        source_shape, target_shape = (batch, None), (batch, None)
        self.target_embedding.build(target_shape)
        if not self.share_embeddings:
            # A shared embedding is built once: `ReversibleEmbedding.build` is not idempotent
            # (a second call adds `reverse_embeddings` again when the output is untied).
            self.source_embedding.build(source_shape)
        self.encoder.build((batch, None, self.d_model))
        self.decoder.build((batch, None, self.d_model), (batch, None, self.d_model))
        self.built = True

    def encode(self, source_ids, training=None):
        """Runs the encoder: `(batch, S)` ids -> `(batch, S, d_model)`, with its padding mask.

        Returns:
            A tuple `(encoder_outputs, source_padding_mask)`; the mask is boolean `(batch, S)`.
        """
        source_mask = masks.padding_mask(source_ids)  # (B, S)
        hidden = self.source_embedding(source_ids, training=training)  # (B, S, D)
        encoded = self.encoder(hidden, padding_mask=source_mask, training=training)  # (B, S, D)
        return encoded, source_mask

    def decode(
        self,
        target_ids,
        encoder_outputs,
        source_padding_mask=None,
        start_index=0,
        self_attention_cache=None,
        cross_attention_cache=None,
        append_to_cache: bool = False,
        encoder_group_size: int = 1,
        training=None,
    ):
        """Runs the decoder and the output projection.

        Args:
            target_ids: `(batch, T)` target ids (the decoder input, starting with BOS).
            encoder_outputs: `(batch, S, d_model)` from `encode`.
            source_padding_mask: boolean `(batch, S)`, `True` for real source tokens.
            start_index: position of `target_ids[:, 0]` (the cache index when decoding
                incrementally).
            self_attention_cache: optional list of per-block caches from
                `self.decoder.initial_cache(batch, max_length)`.
            cross_attention_cache: optional list from
                `self.decoder.compute_cross_attention_cache(encoder_outputs)`.
            append_to_cache: grow the self-attention caches (made with `max_length` 0)
                by this call's positions instead of writing into fixed-size ones.
            encoder_group_size: how many consecutive rows of `target_ids` share one row of
                `encoder_outputs`, its mask and `cross_attention_cache` (a beam's hypotheses).
            training: whether dropout is active.

        Returns:
            float32 logits `(batch, T, vocab)`; with `self_attention_cache`, the tuple
            `(logits, updated_caches)`.
        """
        hidden = self.target_embedding(
            target_ids, start_index=start_index, training=training
        )  # (B, T, D)
        result = self.decoder(
            hidden,
            encoder_outputs,
            decoder_padding_mask=masks.padding_mask(target_ids),
            encoder_padding_mask=source_padding_mask,
            self_attention_cache=self_attention_cache,
            self_attention_cache_update_index=None if self_attention_cache is None else start_index,
            cross_attention_cache=cross_attention_cache,
            append_to_cache=append_to_cache,
            encoder_group_size=encoder_group_size,
            training=training,
        )
        hidden, caches = (result, None) if self_attention_cache is None else result
        logits = ops.cast(self.target_embedding(hidden, reverse=True), "float32")  # (B, T, V)
        return logits if caches is None else (logits, caches)

    # The decoding protocol (`keras_attention.decoding.protocol.DecodingModel`): all that
    # `greedy_search` and `beam_search` call.

    def start_decoding(
        self, source_ids, copies: int = 1, max_length=None, use_cache: bool = True
    ) -> "TranslationState":
        """Encodes `source_ids` once, for `copies` hypotheses of each sentence.

        A sentence's hypotheses share its encoder output and its cross-attention keys and
        values (one row per sentence; `decode_step` passes `copies` to the decoder as its
        `encoder_group_size`). The self-attention caches have one row per hypothesis,
        sentence by sentence.

        Args:
            source_ids: int `(batch, S)`, ending with EOS, padded with 0.
            copies: hypotheses per sentence (the beam size).
            max_length: the most positions a hypothesis may decode (a scalar; needed when
                the caches are fixed buffers, under JAX).
            use_cache: with key/value caches (else each step decodes the whole prefix).

        Returns:
            A `TranslationState`.

        Raises:
            ValueError: if the model is not built.
        """
        if not self.built:
            raise ValueError(
                f"model {self.name} is not built: call model.build() (or the model on a "
                "batch) before decoding with it"
            )
        encoded, source_mask = self.encode(source_ids)  # (B, S, D), (B, S)
        if not use_cache:
            return TranslationState(encoded, source_mask, [], [])
        cross = self.decoder.compute_cross_attention_cache(encoded)  # (2, B, N, S, H) each
        rows = ops.shape(encoded)[0] * copies
        # Growing caches start empty: `max_length * 0`, not 0, so that a traced loop sees a
        # length it does not know (a `tf.while_loop` variable may not change a known shape).
        length = max_length * 0 if _caches_grow() else max_length
        return TranslationState(
            encoded, source_mask, self.decoder.initial_cache(rows, length), cross
        )

    def decode_step(self, state: "TranslationState", tokens, index, copies: int = 1) -> tuple:
        """The log-probabilities of the token after position `index`, and the new state.

        With caches only `tokens[:, index]` goes through the decoder, and the
        self-attention caches grow by it; without, the whole prefix `tokens[:, :index + 1]`
        is decoded again (under JAX, which needs static shapes, the whole buffer: the causal
        mask gives position `index` the prefix's logits).

        Args:
            state: from `start_decoding` (or the last `decode_step`).
            tokens: int `(batch * copies, L + 1)`, BOS then the tokens decoded so far.
            index: scalar int, the position of the last token.
            copies: hypotheses per sentence, as given to `start_decoding`.

        Returns:
            `(log_probs, state)`: float32 `(batch * copies, vocabulary)` and the new state.
        """
        encoded, source_mask, caches, cross = state
        rows = ops.shape(tokens)[0]
        if not caches:
            if keras.backend.backend() == "jax":
                prefix = tokens  # (N, L + 1)
            else:
                prefix = ops.slice(tokens, [0, 0], [rows, index + 1])  # (N, index + 1)
            logits = self.decode(prefix, encoded, source_mask, encoder_group_size=copies)
            last = ops.take(logits, index, axis=1)  # (N, V)
            return ops.log_softmax(ops.cast(last, "float32"), axis=-1), state
        logits, caches = self.decode(
            ops.slice(tokens, [0, index], [rows, 1]),  # (N, 1)
            encoded,
            source_mask,
            start_index=index,
            self_attention_cache=caches,
            cross_attention_cache=cross,
            append_to_cache=_caches_grow(),
            encoder_group_size=copies,
        )  # (N, 1, V)
        log_probs = ops.log_softmax(ops.cast(logits[:, 0], "float32"), axis=-1)
        return log_probs, state._replace(self_attention_caches=caches)

    def reorder_state(self, state: "TranslationState", rows) -> "TranslationState":
        """The state of the hypotheses `rows` (int `(N,)`, each a row of the same sentence's
        hypotheses): the self-attention caches are taken; what a sentence's hypotheses
        share stays."""
        caches = [ops.take(cache, rows, axis=1) for cache in state.self_attention_caches]
        return state._replace(self_attention_caches=caches)

    def select_sentences(
        self, state: "TranslationState", sentences, copies: int = 1
    ) -> "TranslationState":
        """The state of the sentences `sentences` (int `(kept,)`) only, with their `copies`
        hypotheses each: what the searches keep when they drop their finished sentences."""
        rows = sentences
        if copies > 1:
            rows = sentences[:, None] * copies + ops.arange(copies, dtype="int32")[None, :]
            rows = ops.reshape(rows, (-1,))  # (kept * copies,)
        encoded, source_mask, caches, cross = state
        return TranslationState(
            ops.take(encoded, sentences, axis=0),
            ops.take(source_mask, sentences, axis=0),
            [ops.take(cache, rows, axis=1) for cache in caches],
            [ops.take(cache, sentences, axis=1) for cache in cross],
        )

    def sequence_log_probs(self, source_ids, target_in_ids):
        """Float32 log-probabilities `(batch, T, vocabulary)` of the token after each position
        of `target_in_ids` (BOS first), in one forward pass: forced decoding
        (`keras_attention.decoding.forced`)."""
        logits = self((source_ids, target_in_ids), training=False)
        return ops.log_softmax(ops.cast(logits, "float32"), axis=-1)

    def cross_attention_weights(self, source_ids, target_in_ids, layer: int = -1):
        """The decoder's cross-attention weights at block `layer`, averaged over the heads:
        float32 `(batch, T, S)`, row `t` what position `t` of `target_in_ids` attends to
        while predicting the next token (the alignments of `keras_attention.serving.alignment`).
        """
        encoded, source_mask = self.encode(source_ids)
        hidden = self.target_embedding(target_in_ids)
        scores = self.decoder(
            hidden,
            encoded,
            decoder_padding_mask=masks.padding_mask(target_in_ids),
            encoder_padding_mask=source_mask,
            return_attention_scores=True,
        )[1]
        weights = scores[layer]["cross_attention"]  # (B, heads, T, S)
        return ops.mean(ops.cast(weights, "float32"), axis=1)

    def call(self, inputs, training=None):
        if isinstance(inputs, dict):
            source_ids, target_ids = inputs["source"], inputs["target_in"]
        else:
            source_ids, target_ids = inputs
        encoded, source_mask = self.encode(source_ids, training=training)
        return self.decode(target_ids, encoded, source_mask, training=training)

    def quantize(self, mode=None, config=None, weight_only: bool = True, **kwargs):
        """`keras.Model.quantize` (e.g. `model.quantize("int8")`), with one garbage
        collection at the end instead of one per replaced kernel (`models.deferred_collection`):
        the `tiny` preset quantizes in about a second instead of over 30.

        int8 is weight-only unless `weight_only=False`: int8 kernels with per-channel scales,
        multiplied with float activations (`weight_only_int8`). It decodes at float32's speed
        on CPU (within the noise of a shared machine), at the same BLEU, with kernels a
        quarter of the size; Keras' int8, which also quantizes the input of each matmul,
        decodes at about half float32's speed. int8 does not make decoding faster than
        float32 in TensorFlow; CTranslate2's int8 does (`serving.ctranslate2_converter`).
        Measured on the trained Multi30k model `runs/de1` (float32 copy), 200 test2016
        sentences, beam 4, 8 alternating rounds on 2 shared cores: float32 median 109.5
        sentences/s (best 125.4), weight-only int8 100.4 (best 135.3), Keras' int8 48.0;
        BLEU 41.16, 41.26, 41.03.

        Args:
            mode: `"int8"`, `"int4"`, `"float8"` (see `keras.Model.quantize`).
            config: a `keras.quantizers.QuantizationConfig`.
            weight_only: for int8, leave activations in float (drops the config's activation
                quantizer); `False` is Keras' int8, which warns that it decodes slower.
            **kwargs: `keras.Model.quantize`'s other arguments (`filters`).

        Example:

        >>> model = Transformer.from_preset("tiny", vocabulary_size=100)
        >>> model.build()
        >>> model.quantize("int8")
        >>> dense = model.encoder.blocks[0].self_attention.query_dense
        >>> dense.quantization_mode, dense.inputs_quantizer is None
        ('int8', True)
        """
        # Keras has already turned `mode` alone into its default config (by `Layer`'s wrapper).
        int8 = isinstance(config, keras.quantizers.Int8QuantizationConfig)
        if int8 and weight_only:
            config = weight_only_int8(config)
        elif int8 and config.activation_quantizer is not None:
            warnings.warn(DYNAMIC_INT8_WARNING, stacklevel=2)
        with deferred_garbage_collection():
            super().quantize(mode=mode, config=config, **kwargs)

    def enable_lora(
        self,
        rank: int,
        target_names: list[str] | None = None,
        lora_alpha: float | None = None,
    ) -> list[str]:
        """LoRA, as keras-hub's `Backbone.enable_lora(rank)`: every weight frozen, a trainable
        low-rank update on the layers named `target_names` (see `keras_attention.models.lora`).

        Args:
            rank: the update's rank.
            target_names: the `Dense` layers to adapt, by name: by default keras-hub's, the
                attention's `"query"` and `"value"` projections (of every attention: the
                encoder's, the decoder's and the cross-attention); `"key"`,
                `"attention_output"`, and the feed-forward's `"inner"` and `"output"` are the
                others.
            lora_alpha: the update is scaled by `lora_alpha / rank`; default `rank`.

        Returns:
            The paths of the adapted layers.

        Example:

        >>> model = Transformer.from_preset("tiny", vocabulary_size=100)
        >>> model.build()
        >>> len(model.enable_lora(4))  # query and value of 4 + 4 self- and 4 cross-attentions
        24
        >>> sorted({weight.name for weight in model.trainable_weights})  # nothing else trains
        ['lora_kernel_a', 'lora_kernel_b']
        """
        return lora.enable_lora(self, rank, target_names, lora_alpha)

    def save_lora_weights(self, filepath: str | os.PathLike) -> None:
        """Writes only the LoRA kernels to `filepath` (`*.lora.h5`), atomically."""
        lora.save_lora_weights(self, filepath)

    def load_lora_weights(self, filepath: str | os.PathLike) -> None:
        """Reads a `*.lora.h5` file into this model, whose LoRA is enabled alike."""
        lora.load_lora_weights(self, filepath)

    # Keras's saving hooks: a quantized model's `.keras` file records which sub-layers were
    # quantized, and how (`layers.quantized_sublayers`); files of the old projection layout
    # load, their optimizer state included (`layers.legacy_weights`).
    def get_build_config(self):
        return with_quantized_sublayers(self, super().get_build_config())

    def build_from_config(self, config):
        """Builds the model of a `.keras` file, its quantized layers quantized again
        (`layers.quantized_sublayers`), with one garbage collection as in `quantize`."""
        config, policies = without_quantized_sublayers(config)
        with deferred_garbage_collection():
            super().build_from_config(config)
            if policies:
                quantize_sublayers(self, policies)

    def make_train_function(self, force=False):
        """Builds the optimizer, if the model is built, before Keras makes the train step.

        Keras's TensorFlow trainer, with no distribution strategy of the user's, builds the
        optimizer inside the first traced step; a `tf.function` that creates variables is
        traced twice, so every `fit` paid the step's tracing twice (about 4 s in a tiny
        `tools/train.py` start). Built here, the step is traced once.
        """
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and not optimizer.built and self.built:
            strategy = getattr(self, "distribute_strategy", None)
            with strategy.scope() if strategy is not None else contextlib.nullcontext():
                optimizer.build(self.trainable_variables)
        return super().make_train_function(force)

    def compile_from_config(self, config):
        super().compile_from_config(config)
        read_old_optimizer_state(self)

    def load_weights(self, filepath, *args, **kwargs):
        read_old_optimizer_state(self)
        return super().load_weights(filepath, *args, **kwargs)

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "num_encoder_layers": self.num_encoder_layers,
            "num_decoder_layers": self.num_decoder_layers,
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "activation_dropout": self.activation_dropout,
            "norm_first": self.norm_first,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "share_embeddings": self.share_embeddings,
            "tie_output_embeddings": self.tie_output_embeddings,
            "max_wavelength": self.max_wavelength,
            "key_dim": self.key_dim,
            "attention_scale": self.attention_scale,
            "scale_embeddings": self.scale_embeddings,
            "max_positions": self.max_positions,
        }


class TranslationState(NamedTuple):
    """What `Transformer.decode_step` needs between steps (data: passed in and returned).

    Attributes:
        encoder_outputs: `(batch, S, d_model)`, one row per sentence.
        source_mask: boolean `(batch, S)`.
        self_attention_caches: one `(2, batch * copies, heads, positions, head_dim)` cache
            per decoder block, a row per hypothesis; empty when decoding without caches.
        cross_attention_caches: one `(2, batch, heads, S, head_dim)` cache per decoder block,
            a row per sentence; empty when decoding without caches.
    """

    encoder_outputs: object
    source_mask: object
    self_attention_caches: list
    cross_attention_caches: list


def _caches_grow() -> bool:
    """Whether the self-attention caches grow by one position a step (`append_to_cache`).

    Growing, a step copies and attends over the positions written so far; a fixed buffer
    sized to the longest allowed output (source + 50) costs that whole size at every step,
    several times more on real sentences, which end long before their limit. JAX needs
    static shapes in a loop, so there the caches are fixed buffers (written in place by XLA).
    """
    return keras.backend.backend() != "jax"


def weight_only_int8(
    config: keras.quantizers.Int8QuantizationConfig | None = None,
) -> keras.quantizers.Int8QuantizationConfig:
    """`config` (default: Keras' int8) without its activation quantizer: int8 weights with
    their scales, float activations. What `Transformer.quantize("int8")` uses.

    Example:

    >>> weight_only_int8().activation_quantizer is None
    True
    """
    weights = None if config is None else config.weight_quantizer
    return keras.quantizers.Int8QuantizationConfig(
        weight_quantizer=weights, activation_quantizer=None
    )
