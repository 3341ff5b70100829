"""Load every file of the shared real-world subtitle collection and print, per source folder, how
many loaded, how many were rejected with FormatError (and why), and how many wrote back byte for byte.

Run: `.venv/bin/python -m tests.benchmarks.corpus_report [PATH_TO_SUBTITLES]`
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import SHARED_DATA
from tests.corpus import survey


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED_DATA / "subtitles"
    if not root.is_dir():
        print(f"corpus_report: no subtitle collection at {root}", file=sys.stderr)
        return 3
    report = survey(root)
    totals = {
        key: sum(int(e[key]) for e in report.values()) for key in ("loaded", "rejected", "round_trip_exact")
    }  # type: ignore[call-overload]
    print(json.dumps({"total": totals, "by_source": report}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
