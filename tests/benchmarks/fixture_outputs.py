"""What the shipped commands write for every real-world caption file, as a digest per file; prints
JSON. Run before and after a change meant to keep behaviour (a refactor): the two must be equal.

Every SRT and VTT file of the shared real-world collection is copied (under a name saying where it
came from) into a temporary folder, processed as a user would (`punctum batch --audio text --apply
all`), then exported three ways: as it is, `--rebreak` and `--resegment` (times estimated from the
cues, no media). Each written file is hashed; files batch refuses are listed with its summary.

Run: `.venv/bin/python -m tests.benchmarks.fixture_outputs [--compare EARLIER.json]`
(under a minute on 2 cores once the model is exported; writes only to a temporary folder).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import SHARED_DATA

EXPORTS = {"plain": [], "rebreak": ["--rebreak"], "resegment": ["--recut"]}


def _punctum(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *arguments], capture_output=True, text=True, check=False
    )


def digests(collection: Path, work: Path) -> dict[str, object]:
    folder = work / "captions"
    folder.mkdir()
    for path in sorted(collection.rglob("*")):
        if path.suffix.lower() in (".srt", ".vtt") and path.is_file():
            name = "__".join(path.relative_to(collection).parts)
            shutil.copyfile(path, folder / name)
    project = work / "all.punctum"
    batch = _punctum("batch", str(folder), "--project", str(project), "--audio", "text", "--apply", "all")
    written: dict[str, dict[str, str]] = {}
    for how, options in EXPORTS.items():
        out = work / how
        exported = _punctum("export", str(project), "--out", str(out), *options)
        written[how] = {
            path.name: hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            for path in sorted(out.iterdir())
            if path.is_file()
        }
        written[how]["(exit status)"] = str(exported.returncode)
    return {
        "files": len(list(folder.iterdir())),
        "batch_exit_status": batch.returncode,
        "batch_says": batch.stdout.strip().splitlines()[-3:] + batch.stderr.strip().splitlines()[-3:],
        "written": written,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="an earlier run's JSON: list what differs")
    arguments = parser.parse_args()
    collection = SHARED_DATA / "subtitles"
    if not collection.is_dir():
        print(f"fixture_outputs: no subtitle collection at {collection}", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory() as work:
        result = digests(collection, Path(work))
    if arguments.compare is not None:
        earlier = json.loads(arguments.compare.read_text(encoding="utf-8"))["written"]
        result["differs_from_earlier"] = {
            how: sorted(
                name
                for name in set(files) | set(earlier.get(how, {}))
                if files.get(name) != earlier.get(how, {}).get(name)
            )
            for how, files in result["written"].items()  # type: ignore[union-attr]
        }
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
