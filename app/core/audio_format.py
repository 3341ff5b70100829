"""Audio as Punctum decodes it and its models read it: mono samples at 16 kHz, the rate the
Whisper-family recogniser and the voice-activity detector were trained at."""

from __future__ import annotations

SAMPLE_RATE = 16_000
