"""Moments of a start, for measuring the installed program from outside (packaging/smoke.sh).

With ``PUNCTUM_STARTUP_LOG=FILE`` set, each moment is appended to FILE as a JSON line with the
wall-clock time, which the caller compares with the time it launched the program.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def note(event: str) -> None:
    target = os.environ.get("PUNCTUM_STARTUP_LOG")
    if not target:
        return
    try:
        with Path(target).open("a", encoding="utf-8") as log:
            log.write(json.dumps({"event": event, "time": time.time()}) + "\n")
    except OSError:
        pass  # a measurement aid must never stop the editor
