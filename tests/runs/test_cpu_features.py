"""`cpu_has_bfloat16`: read from the `flags` line of `/proc/cpuinfo`."""

import pytest

from keras_attention.runs.cpu_features import cpu_has_bfloat16

ZEN4 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n"
SAPPHIRE_RAPIDS = "flags\t\t: fpu avx512f amx_tile amx_bf16 amx_int8\n"
SKYLAKE = "flags\t\t: fpu sse2 avx2 avx512f avx512bw\n"
ARM = "processor\t: 0\nFeatures\t: fp asimd bf16\n"


@pytest.mark.parametrize(
    "cpuinfo, expected",
    [(ZEN4, True), (SAPPHIRE_RAPIDS, True), (SKYLAKE, False), (ARM, None), ("", None)],
)
def test_bfloat16_instructions_are_read_from_the_flags(cpuinfo: str, expected: bool | None):
    assert cpu_has_bfloat16(cpuinfo) is expected


def test_a_flag_must_match_whole():
    # "avx512_bf16x" is not the flag (a substring match would say it is).
    assert cpu_has_bfloat16("flags\t: avx512_bf16x amx_bf16_beta\n") is False


@pytest.mark.parametrize("has_bfloat16, warned", [(False, True), (True, False), (None, False)])
def test_training_in_bfloat16_warns_on_a_cpu_without_it(
    monkeypatch, caplog, has_bfloat16: bool | None, warned: bool
):
    from keras_attention.runs import train

    monkeypatch.setattr(train, "cpu_has_bfloat16", lambda: has_bfloat16)
    with caplog.at_level("WARNING", logger=train.logger.name):
        train._warn_of_slow_bfloat16("mixed_bfloat16")
        train._warn_of_slow_bfloat16("float32")  # never warns
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == warned
    if warned:
        assert "--mixed-precision float32" in messages[0]
