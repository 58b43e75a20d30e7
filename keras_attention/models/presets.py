"""Named sizes of the Transformer (paper Table 3 and two CPU-sized ones)."""

PRESETS = {
    # Paper Table 3, "base": N=6, d_model=512, h=8, d_ff=2048, P_drop=0.1.
    "base": dict(
        num_encoder_layers=6,
        num_decoder_layers=6,
        d_model=512,
        num_heads=8,
        intermediate_dim=2048,
        dropout=0.1,
    ),
    # Paper Table 3, "big": d_model=1024, h=16, d_ff=4096, P_drop=0.3.
    "big": dict(
        num_encoder_layers=6,
        num_decoder_layers=6,
        d_model=1024,
        num_heads=16,
        intermediate_dim=4096,
        dropout=0.3,
    ),
    # CPU-sized.
    "small": dict(
        num_encoder_layers=3,
        num_decoder_layers=3,
        d_model=256,
        num_heads=8,
        intermediate_dim=1024,
        dropout=0.1,
    ),
    # The size fairseq's transformer_tiny uses on Multi30k.
    "tiny": dict(
        num_encoder_layers=4,
        num_decoder_layers=4,
        d_model=128,
        num_heads=4,
        intermediate_dim=256,
        dropout=0.3,
    ),
}


def preset_config(name: str, **overrides) -> dict:
    """The constructor arguments of preset `name`, updated with `overrides`.

    Raises:
        ValueError: if `name` is not a preset.
    """
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}; got preset={name!r}")
    return {**PRESETS[name], **overrides}
