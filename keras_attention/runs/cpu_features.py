"""What the CPU can do, as far as training's settings care: bfloat16 instructions."""

from pathlib import Path

# x86 flags (Linux `/proc/cpuinfo`) of the instructions that make bfloat16 matmuls fast.
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_bfloat16(cpuinfo: str | None = None) -> bool | None:
    """Whether the CPU has bfloat16 matmul instructions (`BFLOAT16_FLAGS`).

    Without them `mixed_bfloat16` emulates bfloat16 and can train slower than float32.

    Args:
        cpuinfo: the text of `/proc/cpuinfo` (default: read it).

    Returns:
        `True` or `False` on an x86 Linux machine; `None` where it cannot tell (another
        system, or no x86 `flags` line).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return any(flag in value.split() for flag in BFLOAT16_FLAGS)
    return None
