"""Benchmarks: scripts that print JSON (speed, memory, scores), never part of ``make test``."""

from __future__ import annotations

import re
from pathlib import Path


def cpu_flags() -> list[str]:
    """The CPU's AVX flags: int8 numerics, bfloat16 speed and every timing depend on them."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return sorted(set(re.findall(r"\bavx[0-9a-z_]*", text)))
