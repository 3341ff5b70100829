"""Scores of a punctuation model on the held-out benchmarks; prints JSON.

IWSLT2011 test2011 (reference transcripts) and test2011asr (ASR output), IWSLT17 tst2016 English,
German and French, the second half of each UD dev file (the first half is the training dev set),
and the held-out Earnings-22 test calls. Overall = micro-average over comma, period, question.
For a model with a gap branch, the Earnings-22 calls are scored twice: with their word timings
(pauses from the force-aligned words) and without, and the gain is printed per mark.

Run: `.venv/bin/python -m tests.benchmarks.eval_model [--model DIR] [--int8] [--data DIR]`
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.ml import data as corpora
from app.services.evaluation import score_documents
from app.services.punctuate import Punctuator
from tests.conftest import SHARED_DATA

UD = {
    "de": "UD_German-GSD/de_gsd-ud-dev.conllu",
    "fr": "UD_French-GSD/fr_gsd-ud-dev.conllu",
    "es": "UD_Spanish-GSD/es_gsd-ud-dev.conllu",
    "pt": "UD_Portuguese-Bosque/pt_bosque-ud-dev.conllu",
    "nl": "UD_Dutch-Alpino/nl_alpino-ud-dev.conllu",
    "ro": "UD_Romanian-RRT/ro_rrt-ud-dev.conllu",
}


def benchmarks(root: Path) -> dict[str, list[corpora.LabelledText]]:
    sets = {
        "iwslt2011_test2011": [corpora.read_iwslt_tags(root / "iwslt2011" / "test2011")],
        "iwslt2011_test2011asr": [corpora.read_iwslt_tags(root / "iwslt2011" / "test2011asr")],
    }
    for language, name in (("en", "en-de.en"), ("de", "de-en.de"), ("fr", "fr-en.fr")):
        sets[f"iwslt17_tst2016_{language}"] = corpora.read_mteval_xml(
            root / "iwslt17" / f"IWSLT17.TED.tst2016.{name}.xml", language, "iwslt17"
        )
    for language, path in UD.items():
        sets[f"ud_test_{language}"] = [corpora.read_conllu(root / "ud" / path, language, "test")]
    split = corpora.earnings_split(root / "earnings22" / "force_aligned_nlp_references")
    sets["earnings22_test_calls"] = [corpora.read_rev(p) for p in split["test"]]
    return sets


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--data", default=str(SHARED_DATA))
    parser.add_argument("--only", nargs="*", help="benchmark names to run")
    parser.add_argument("--stride", type=float, help="window stride (fraction of a window) to try")
    parser.add_argument("--window", type=int, help="window size in sub-tokens to try")
    args = parser.parse_args()
    root = Path(args.data)
    if not root.is_dir():
        print(f"eval_model: no data folder at {root}", file=sys.stderr)
        return 3
    punctuator = Punctuator(args.model, quantize=args.int8)
    settings = punctuator.load()[2]
    if args.stride:
        settings["stride"] = args.stride
    if args.window:
        settings["window_tokens"] = args.window
    results: dict[str, object] = {
        "model": args.model or "shipped default",
        "int8": args.int8,
        "window_tokens": settings.get("window_tokens"),
        "stride": settings.get("stride", 0.5),
    }
    for name, documents in benchmarks(root).items():
        if args.only and name not in args.only:
            continue
        # Two decimals where a gain is compared with a goal: differences of rounded F1 can round up.
        digits = 2 if name.startswith("earnings22") else 1
        result = score_documents(documents, punctuator, digits=digits)
        scores = result.pop("scores")
        results[name] = {**result, **scores}
        print(name, scores["overall"], file=sys.stderr)
        if name.startswith("earnings22") and punctuator.hears:
            plain = score_documents(documents, punctuator, timings=False, digits=digits).pop("scores")
            results[f"{name}_without_timings"] = plain
            results[f"{name}_timing_gain_f1"] = {
                mark: round(scores[mark]["f1"] - plain[mark]["f1"], digits)
                for mark in ("COMMA", "PERIOD", "QUESTION", "overall")
            }
            print(name, "without timings", plain["overall"], file=sys.stderr)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
