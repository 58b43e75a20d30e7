"""A trained `Transformer` as a CTranslate2 model, for serving and for speed comparisons.

CTranslate2 (https://opennmt.net/CTranslate2) runs Transformer translators with its own C++
kernels (fused attention projections, optional int8 weights). `convert_to_ctranslate2` writes
a model of this library, with its tokenizer's vocabulary, as a CTranslate2 model folder
(`model.bin`, `config.json`, `shared_vocabulary.json`); `convert_run_to_ctranslate2` does it
for a run folder of `tools/train.py`. `ctranslate2` is an optional dependency
(`pip install ctranslate2`), imported only by the functions that need it.

How the model maps onto CTranslate2's `TransformerSpec`:

- Embeddings: the token embedding matrix (shared by the encoder, the decoder and, tied, the
  output projection, or one per role), scaled by `sqrt(d_model)`; the positional encoding is
  our own table (`SinusoidalPositionalEncoding`: sines and cosines interleaved, the first
  source token and the decoder's BOS at position 0) written into the spec, since
  CTranslate2's built-in table puts the sines and cosines in two halves.
- Attention: the `Dense` kernels `(d_model, heads * head_dim)` (heads in order) become linear
  weights `(heads * head_dim, d_model)`; CTranslate2 fuses the query, key and value
  projections of self-attention into one linear, and the key and value projections of
  cross-attention into another. The output kernel `(heads * head_dim, d_model)` becomes
  `(d_model, heads * head_dim)`. A model with LoRA enabled is converted with its LoRA update
  merged into the kernels (`Dense.kernel`).
- Layer norms: post-LN (`norm_first=False`, the paper) maps to `pre_norm=False`; pre-LN to
  `pre_norm=True`, with each stack's final norm. Our epsilon (1e-6 by default) is written to
  the config: CTranslate2's own default is 1e-5.
- Tokens: the SentencePiece pieces in id order are the source and target vocabulary
  (`<pad>`, `<unk>`, `<s>`, `</s>` at ids 0-3); the decoder starts from `<s>`, and
  `add_source_eos` makes CTranslate2 append `</s>` to every source, as our models see it.

The searches differ in two ways worth knowing when comparing the engines: CTranslate2's
length penalty divides by `length ** length_penalty`, ours by `((5 + length) / 6) ** alpha`
(so only a penalty of 0 is the same search); and we never generate `<pad>` or `<s>`, while
CTranslate2 does unless told (`SUPPRESSED_SEQUENCES`; a trained model gives them no
probability anyway).

Example:

>>> import ctranslate2
>>> from keras_attention.runs import load_run
>>> model, tokenizer = load_run("runs/translator")
>>> path = convert_to_ctranslate2(model, tokenizer, "runs/translator/ctranslate2")
>>> translator = ctranslate2.Translator(str(path), device="cpu")
>>> results = translator.translate_batch(source_tokens(tokenizer, ["A dog runs."]))
>>> detokenize(tokenizer, [result.hypotheses[0] for result in results])
['...']
"""

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
import sentencepiece

from keras_attention.core.atomic_files import move_folder_into_place
from keras_attention.core.checks import check_positive_int
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.layers import SinusoidalPositionalEncoding
from keras_attention.models import Transformer

# Positions in the written sinusoidal table: longer sources or outputs are refused by
# CTranslate2 (its translators truncate sources to `max_input_length`, 1024 by default).
DEFAULT_MAX_POSITIONS = 1024
# The files of a CTranslate2 model folder: `overwrite` replaces only a folder holding these.
MODEL_FILES = ("model.bin", "config.json")
# Pass as `suppress_sequences` to `translate_batch` so that CTranslate2, like our searches,
# never generates padding or BOS.
SUPPRESSED_SEQUENCES = [["<pad>"], ["<s>"]]
INSTALL_HINT = "the CTranslate2 converter needs the ctranslate2 package: pip install ctranslate2"


def _import_ctranslate2():
    """The `ctranslate2` module; `ImportError` with the install command if it is missing."""
    try:
        import ctranslate2
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return ctranslate2


def check_quantization(quantization: str | None) -> None:
    """Raises `ValueError` naming `quantization` unless CTranslate2 accepts it.

    Args:
        quantization: `None` (float32 weights) or a CTranslate2 weight type, e.g. `"int8"`,
            `"int8_float16"`, `"float16"`.

    Raises:
        ImportError: if `ctranslate2` is not installed.
        ValueError: naming `quantization` and the accepted values.
    """
    _import_ctranslate2()
    from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES

    if quantization is not None and quantization not in ACCEPTED_MODEL_TYPES:
        raise ValueError(
            f"quantization must be one of {', '.join(ACCEPTED_MODEL_TYPES)}; "
            f"got quantization={quantization!r}"
        )


def _is_ctranslate2_model(path: Path) -> bool:
    return all((path / name).is_file() for name in MODEL_FILES)


def check_ctranslate2_output_dir(output_dir: str | os.PathLike, overwrite: bool) -> None:
    """Checks, before any work, that a CTranslate2 model may be written to `output_dir`.

    A missing or empty folder may be written. A non-empty one only with `overwrite`, and
    only if it holds a CTranslate2 model (`model.bin` and `config.json`), so that a
    mistyped path (a run folder, say) is never deleted.

    Args:
        output_dir: the model folder to write.
        overwrite: whether an existing CTranslate2 model there may be replaced.

    Raises:
        FileExistsError: naming `output_dir` if it is a file, or a non-empty folder that may
            not be replaced.
    """
    path = Path(output_dir)
    if not path.exists():
        return
    if not path.is_dir():
        raise FileExistsError(f"the output folder {path} is a file")
    if not any(path.iterdir()):
        return
    if not overwrite:
        raise FileExistsError(
            f"the output folder {path} is not empty; pass overwrite=True (--overwrite) to "
            "replace the CTranslate2 model in it"
        )
    if not _is_ctranslate2_model(path):
        raise FileExistsError(
            f"the output folder {path} is not empty and holds no CTranslate2 model "
            f"({' and '.join(MODEL_FILES)}); it is not replaced, even with overwrite"
        )


def vocabulary(tokenizer: SubwordTokenizer) -> list[str]:
    """The tokenizer's pieces in id order (`<pad>`, `<unk>`, `<s>`, `</s>`, ...)."""
    processor = sentencepiece.SentencePieceProcessor(model_proto=tokenizer.model_proto)
    return [processor.id_to_piece(index) for index in range(processor.get_piece_size())]


def source_tokens(tokenizer: SubwordTokenizer, sentences: Sequence[str]) -> list[list[str]]:
    """Sentences as the pieces CTranslate2 takes, without `</s>` (the model appends it).

    Args:
        tokenizer: the model's tokenizer.
        sentences: the source sentences.

    Returns:
        One list of pieces per sentence.
    """
    pieces = vocabulary(tokenizer)
    ids = tokenizer.tokenize(list(sentences)).to_list()
    return [[pieces[index] for index in sentence] for sentence in ids]


def detokenize(tokenizer: SubwordTokenizer, hypotheses: Sequence[Sequence[str]]) -> list[str]:
    """CTranslate2's output pieces (e.g. `result.hypotheses[0]`) as text.

    Args:
        tokenizer: the model's tokenizer.
        hypotheses: one list of pieces per sentence.

    Returns:
        One string per sentence.
    """
    if not hypotheses:
        return []
    index = {piece: position for position, piece in enumerate(vocabulary(tokenizer))}
    ids = [[index.get(piece, UNK_ID) for piece in hypothesis] for hypothesis in hypotheses]
    width = max((len(sentence) for sentence in ids), default=0)
    padded = np.full((len(ids), width), PAD_ID, "int32")
    for row, sentence in enumerate(ids):
        padded[row, : len(sentence)] = sentence
    return [text.decode("utf-8") for text in tokenizer.detokenize(padded).numpy()]


def _check_convertible(model: Transformer, tokenizer: SubwordTokenizer) -> None:
    """Raises `ValueError` naming the setting that CTranslate2's Transformer cannot hold."""
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a keras_attention Transformer; got {type(model).__name__}")
    if not model.built:
        raise ValueError("model must be built (call model.build() or the model once)")
    if model.vocabulary_size != tokenizer.vocabulary_size:
        raise ValueError(
            f"the model's vocabulary_size={model.vocabulary_size} differs from the "
            f"tokenizer's {tokenizer.vocabulary_size} pieces"
        )
    if model.output_vocabulary_size != model.vocabulary_size:
        raise ValueError(
            "the converter needs one vocabulary (the tokenizer's) for source and target; got "
            f"target_vocabulary_size={model.target_vocabulary_size}, "
            f"vocabulary_size={model.vocabulary_size}"
        )
    # The paper's variations (Table 3) that CTranslate2's TransformerSpec has no field for:
    # its attention always divides by sqrt(d_model / heads) and scales the embeddings.
    paper_defaults = {
        "key_dim": (None, model.d_model // model.num_heads),
        "attention_scale": (None,),
        "scale_embeddings": (True,),
        "max_positions": (None,),
    }
    for name, supported in paper_defaults.items():
        value = getattr(model, name)
        if value not in supported:
            raise ValueError(
                f"CTranslate2's Transformer converter supports the paper's {name} only; the "
                f"model has {name}={value!r}"
            )
    for stack in (model.encoder, model.decoder):
        activation = keras.activations.serialize(stack.activation)
        if activation != "relu":
            raise ValueError(
                f"CTranslate2's Transformer converter supports activation='relu' only; "
                f"{stack.name} has activation={activation!r}"
            )
    quantized = [
        layer.path
        for layer in model._flatten_layers(include_self=False)
        if getattr(layer, "quantization_mode", None) is not None
    ]
    if quantized:
        raise ValueError(
            "the model is quantized (model.quantize), which the converter cannot read; convert "
            "the float model and pass quantization='int8' (CTranslate2's own) instead; "
            f"quantized layers: {quantized[0]}{', ...' if len(quantized) > 1 else ''}"
        )


def _numpy(variable) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(variable), dtype="float32")


def _set_layer_norm(spec, norm: keras.layers.LayerNormalization) -> None:
    spec.gamma = _numpy(norm.gamma)
    spec.beta = _numpy(norm.beta)


def _set_linear(spec, kernel: np.ndarray, bias: np.ndarray) -> None:
    """A linear layer of `kernel` `(in, out)` as CTranslate2's `(out, in)` weight."""
    spec.weight = np.ascontiguousarray(kernel.T)
    spec.bias = bias


def _set_projections(spec, denses: list[keras.layers.Dense]) -> None:
    """One linear for `denses` together (CTranslate2 fuses Q, K, V and cross-attention's K, V),
    each a kernel `(d_model, heads * head_dim)` and a bias `(heads * head_dim,)`."""
    kernels = [_numpy(dense.kernel) for dense in denses]
    biases = [_numpy(dense.bias) for dense in denses]
    _set_linear(spec, np.concatenate(kernels, axis=1), np.concatenate(biases))


def _set_attention(spec, attention, norm, self_attention: bool) -> None:
    """A `MultiHeadAttention` layer and the layer norm of its sub-layer."""
    query, key, value = attention.query_dense, attention.key_dense, attention.value_dense
    if self_attention:
        _set_projections(spec.linear[0], [query, key, value])
    else:
        _set_projections(spec.linear[0], [query])
        _set_projections(spec.linear[1], [key, value])
    output = attention.output_dense
    _set_linear(spec.linear[-1], _numpy(output.kernel), _numpy(output.bias))
    _set_layer_norm(spec.layer_norm, norm)


def _set_feed_forward(spec, block) -> None:
    feed_forward = block.feed_forward
    for linear, dense in zip(
        (spec.linear_0, spec.linear_1),
        (feed_forward.inner_dense, feed_forward.output_dense),
        strict=True,
    ):
        _set_linear(linear, _numpy(dense.kernel), _numpy(dense.bias))
    _set_layer_norm(spec.layer_norm, block.feed_forward_norm)


def _set_embeddings(stack_spec, embedding, encodings: np.ndarray) -> None:
    """Token embeddings, their `sqrt(d_model)` scale and the positional table of a stack."""
    stack_spec.scale_embeddings = bool(embedding.scale_embeddings)
    stack_spec.position_encodings.encodings = encodings
    weight = _numpy(embedding.embeddings)
    if isinstance(stack_spec.embeddings, list):  # the encoder: one per source factor
        stack_spec.embeddings[0].weight = weight
    else:
        stack_spec.embeddings.weight = weight


def _position_table(model: Transformer, max_positions: int) -> np.ndarray:
    """Our sinusoidal encoding of positions `0 .. max_positions - 1`, `(max_positions, d)`."""
    layer = SinusoidalPositionalEncoding(model.max_wavelength, dtype="float32")
    return _numpy(layer(np.zeros((1, max_positions, model.d_model), "float32"))[0])


def _set_encoder(spec, model: Transformer, encodings: np.ndarray) -> None:
    _set_embeddings(spec, model.source_embedding, encodings)
    for layer_spec, block in zip(spec.layer, model.encoder.blocks, strict=True):
        _set_attention(
            layer_spec.self_attention, block.self_attention, block.self_attention_norm, True
        )
        _set_feed_forward(layer_spec.ffn, block)
    if model.encoder.final_norm is not None:
        _set_layer_norm(spec.layer_norm, model.encoder.final_norm)


def _set_decoder(spec, model: Transformer, encodings: np.ndarray) -> None:
    embedding = model.target_embedding
    _set_embeddings(spec, embedding, encodings)
    for layer_spec, block in zip(spec.layer, model.decoder.blocks, strict=True):
        _set_attention(
            layer_spec.self_attention, block.self_attention, block.self_attention_norm, True
        )
        _set_attention(
            layer_spec.attention, block.cross_attention, block.cross_attention_norm, False
        )
        _set_feed_forward(layer_spec.ffn, block)
    if model.decoder.final_norm is not None:
        _set_layer_norm(spec.layer_norm, model.decoder.final_norm)
    token_embedding = embedding.token_embedding
    if token_embedding.tie_weights:
        spec.projection.weight = _numpy(token_embedding.embeddings)
    else:  # `reverse_embeddings` is (d_model, vocabulary)
        spec.projection.weight = np.ascontiguousarray(_numpy(token_embedding.reverse_embeddings).T)


def ctranslate2_spec(
    model: Transformer,
    tokenizer: SubwordTokenizer,
    max_positions: int = DEFAULT_MAX_POSITIONS,
):
    """The `ctranslate2.specs.TransformerSpec` of `model`, with its weights and vocabulary.

    Args:
        model: a built `Transformer` with one vocabulary (the tokenizer's) for source and
            target; shared or separate, tied or untied embeddings all convert.
        tokenizer: the model's tokenizer.
        max_positions: rows of the positional table, the longest source or output
            CTranslate2 will take.

    Returns:
        The spec, validated (not yet quantized or saved).

    Raises:
        ImportError: if `ctranslate2` is not installed.
        ValueError: naming the setting of `model` that cannot be converted.
    """
    ctranslate2 = _import_ctranslate2()
    _check_convertible(model, tokenizer)
    check_positive_int("max_positions", max_positions)
    spec = ctranslate2.specs.TransformerSpec.from_config(
        (model.num_encoder_layers, model.num_decoder_layers),
        model.num_heads,
        pre_norm=model.norm_first,
    )
    encodings = _position_table(model, max_positions)
    _set_encoder(spec.encoder, model, encodings)
    _set_decoder(spec.decoder, model, encodings)
    pieces = vocabulary(tokenizer)
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    config = spec.config
    config.unk_token = pieces[UNK_ID]
    config.bos_token = pieces[BOS_ID]
    config.eos_token = pieces[EOS_ID]
    config.decoder_start_token = pieces[BOS_ID]
    config.add_source_eos = True
    config.layer_norm_epsilon = float(model.layer_norm_epsilon)
    spec.validate()
    return spec


def convert_to_ctranslate2(
    model: Transformer,
    tokenizer: SubwordTokenizer,
    output_dir: str | os.PathLike,
    quantization: str | None = None,
    overwrite: bool = False,
    max_positions: int = DEFAULT_MAX_POSITIONS,
) -> Path:
    """Writes `model` and its tokenizer's vocabulary as a CTranslate2 model folder.

    The folder is written beside `output_dir` under a temporary name and renamed into place
    only when complete, so a failed conversion leaves no half-written model (and an
    overwritten model stays as it was).

    Args:
        model: a built `Transformer` (see `ctranslate2_spec` for what converts).
        tokenizer: the model's tokenizer.
        output_dir: the model folder to write; its parent folders are created.
        quantization: `None` (float32 weights) or a CTranslate2 weight type, e.g. `"int8"`.
        overwrite: replace a CTranslate2 model already in `output_dir`.
        max_positions: the longest source or output the model will take.

    Returns:
        The path of the model folder.

    Raises:
        ImportError: if `ctranslate2` is not installed.
        ValueError: naming an unknown `quantization` or a setting of `model` that cannot be
            converted (nothing is written).
        FileExistsError: naming `output_dir` if it is a file or a non-empty folder that may
            not be replaced (see `check_ctranslate2_output_dir`).

    Example:

    >>> import ctranslate2
    >>> from keras_attention.runs import load_run
    >>> model, tokenizer = load_run("runs/translator")
    >>> path = convert_to_ctranslate2(model, tokenizer, "ct2_model", quantization="int8")
    >>> sorted(os.listdir(path))
    ['config.json', 'model.bin', 'shared_vocabulary.json']
    >>> results = ctranslate2.Translator(str(path)).translate_batch(
    ...     source_tokens(tokenizer, ["A dog runs."]), beam_size=2)
    >>> len(results[0].hypotheses)
    1
    """
    check_quantization(quantization)
    target = Path(output_dir)
    check_ctranslate2_output_dir(target, overwrite)
    spec = ctranslate2_spec(model, tokenizer, max_positions)
    spec.optimize(quantization=quantization)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        (staging / "model").mkdir()
        spec.save(str(staging / "model"))
        check_ctranslate2_output_dir(target, overwrite)  # a folder that appeared meanwhile
        # `target` may be replaced: it was checked just above (empty, or an old model).
        move_folder_into_place(staging, target, overwrite=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
