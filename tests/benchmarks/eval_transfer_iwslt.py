"""Reference transfer on IWSLT2011: carry the punctuation of the human transcript (MT source XML)
onto the ASR words of ``test2011asr`` and score against that file's labels (commas there were
placed by hand, periods follow segment ends). Prints JSON: P/R/F1 per mark and overall, SER.

Run: `.venv/bin/python -m tests.benchmarks.eval_transfer_iwslt [IWSLT2011_FOLDER]`
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from app.align.transfer import transfer
from app.core.marks import mark_class
from app.core.metrics import punctuation_scores
from app.formats.corpora import read_iwslt_xml, read_token_tags
from tests.conftest import SHARED_DATA


def evaluate(folder: Path) -> dict[str, object]:
    reference = [w for seg in read_iwslt_xml(folder / "IWSLT12.TED.MT.tst2011.en-fr.en.xml") for w in seg]
    asr = read_token_tags(folder / "test2011asr")
    gold = [mark_class(w.mark) for w in asr]
    captions = [replace(w, mark="") for w in asr]
    began = time.perf_counter()
    result = transfer(captions, reference, "en")
    seconds = time.perf_counter() - began
    predicted = [""] * len(captions)
    for suggestion in result.suggestions:
        if suggestion.casing is None:
            predicted[suggestion.gap] = mark_class(suggestion.mark)
    return {
        "task": "iwslt2011 test2011asr: reference punctuation transfer",
        "asr_words": len(captions),
        "reference_words": len(reference),
        "scores": punctuation_scores(gold, predicted),
        "report": result.report,
        "seconds": round(seconds, 3),
    }


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED_DATA / "iwslt2011"
    if not folder.is_dir():
        print(f"eval_transfer_iwslt: no IWSLT2011 folder at {folder}", file=sys.stderr)
        return 3
    print(json.dumps(evaluate(folder), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
