"""Benchmarks: scripts that print JSON (speed, memory, scores), never part of ``make test``."""

from __future__ import annotations

import argparse
import re
from pathlib import Path


def cpu_flags() -> list[str]:
    """The CPU's AVX flags: int8 numerics, bfloat16 speed and every timing depend on them."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return sorted(set(re.findall(r"\bavx[0-9a-z_]*", text)))


def add_recogniser_options(parser: argparse.ArgumentParser) -> None:
    """``--whisper`` and ``--compute-type``: the speech benchmarks on another model or arithmetic
    (float32 against the int8 Punctum runs), ``args.whisper`` and ``args.compute_type``."""
    from app.ml.whisper_model import COMPUTE_TYPE

    parser.add_argument("--whisper", help="a CTranslate2 Whisper folder (default: the one Punctum uses)")
    parser.add_argument(
        "--compute-type",
        default=COMPUTE_TYPE,
        help="the recogniser's arithmetic, e.g. float32 (default int8)",
    )
