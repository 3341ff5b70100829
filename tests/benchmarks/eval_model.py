"""Scores of a punctuation model on the held-out benchmarks; prints JSON.

IWSLT2011 test2011 (reference transcripts) and test2011asr (ASR output), IWSLT17 tst2016 English,
German and French, the second half of each UD dev file (the first half is the training dev set),
and the held-out Earnings-22 test calls; for choosing between candidates, the dev sets: the
Earnings-22 dev calls, the held-out tenth of IWSLT2011 dev2012 and the TED talks held out from
training (`ted_dev_talks`, 92 talks, 184k words). Overall = micro-average over comma, period, question.
For a model with a gap branch, the Earnings-22 calls are scored twice: with their word timings
(pauses from the force-aligned words) and without, and the gain is printed per mark, per call, and
with a 95% interval from resampling the calls (how much the figure owes to which calls were held
out).

Run: `.venv/bin/python -m tests.benchmarks.eval_model [--model DIR] [--int8] [--data DIR]`
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from pathlib import Path

from app.ml.windows import WINDOW_MERGES
from app.services.model import ENGINES, Punctuator
from app.training import data as corpora
from app.training.evaluation import score_documents
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
    # The dev calls: where a change to the timing path is judged, so the test calls stay unread.
    sets["earnings22_dev_calls"] = [corpora.read_rev(p) for p in split["dev"]]
    # English TED dev: the last tenth of dev2012 (never trained on) and the TED talks held out
    # whole from training (the "talks" source's dev slice), where candidates are chosen.
    sets["iwslt2011_dev2012_heldout"] = [
        corpora.split_words(corpora.read_iwslt_tags(root / "iwslt2011" / "dev2012"), 0.9)[1]
    ]
    talks = corpora.read_talks(root / "ted" / "en_ted_talks.txt", "en", "ted")
    sets["ted_dev_talks"] = corpora.held_out_talks(talks)["dev"]
    return sets


Counts = tuple[int, int, int]  # marks right, marks proposed, marks in the reference (metrics.mark_counts)


def _f1(counts: list[Counts], chosen: list[int]) -> float:
    right, proposed, wanted = (sum(counts[i][k] for i in chosen) for k in range(3))
    return 200 * right / (proposed + wanted) if proposed + wanted else 0.0


def timing_gain_spread(
    documents: list[corpora.LabelledText], timed: list[Counts], plain: list[Counts]
) -> dict[str, object]:
    """The overall timing gain per document, and its 95% interval over documents resampled, from
    each document's counts with timings and without."""
    every = list(range(len(documents)))
    rng = random.Random(0)
    resampled = sorted(
        _f1(timed, chosen) - _f1(plain, chosen)
        for chosen in ([rng.choice(every) for _ in every] for _ in range(4000))
    )
    return {
        "per_document": {
            d.name: round(_f1(timed, [i]) - _f1(plain, [i]), 2) for i, d in enumerate(documents)
        },
        "interval_95": [round(resampled[100], 2), round(resampled[3899], 2)],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--engine", choices=ENGINES, default="onnx", help="how the model runs")
    parser.add_argument("--data", default=str(SHARED_DATA))
    parser.add_argument("--only", nargs="*", help="benchmark names to run")
    parser.add_argument("--stride", type=float, help="window stride (fraction of a window) to try")
    parser.add_argument("--window", type=int, help="window size in sub-tokens to try")
    parser.add_argument("--merge", choices=WINDOW_MERGES, help="how overlapping windows are merged, to try")
    parser.add_argument("--digits", type=int, choices=(1, 2), default=1, help="decimals of F1")
    args = parser.parse_args()
    root = Path(args.data)
    if not root.is_dir():
        print(f"eval_model: no data folder at {root}", file=sys.stderr)
        return 3
    punctuator = Punctuator(args.model, quantize=args.int8, engine=args.engine)
    model = punctuator.load()
    tried = {"stride": args.stride, "window_tokens": args.window, "window_merge": args.merge}
    model.settings = dataclasses.replace(model.settings, **{k: v for k, v in tried.items() if v})
    settings = model.settings
    results: dict[str, object] = {
        "model": args.model or "shipped default",
        "int8": args.int8,
        "engine": args.engine,
        "window_tokens": settings.window_tokens,
        "stride": settings.stride,
        "window_merge": settings.window_merge,
    }
    for name, documents in benchmarks(root).items():
        if args.only and name not in args.only:
            continue
        # Two decimals where a gain is compared with a goal: differences of rounded F1 can round up.
        timed = name.startswith("earnings22") and punctuator.reads_timings
        digits = 2 if name.startswith("earnings22") or args.digits == 2 else 1
        result = score_documents(documents, punctuator, digits=digits, per_document=timed)
        scores, timed_counts = result.pop("scores"), result.pop("document_counts", None)
        results[name] = {**result, **scores}
        print(name, scores["overall"], file=sys.stderr)
        if timed:
            plain_result = score_documents(
                documents, punctuator, timings=False, digits=digits, per_document=True
            )
            plain = plain_result["scores"]
            results[f"{name}_without_timings"] = plain
            results[f"{name}_timing_gain_f1"] = {
                mark: round(scores[mark]["f1"] - plain[mark]["f1"], digits)
                for mark in ("COMMA", "PERIOD", "QUESTION", "overall")
            }
            results[f"{name}_timing_gain_spread"] = timing_gain_spread(
                documents, timed_counts, plain_result["document_counts"]
            )
            print(name, "without timings", plain["overall"], file=sys.stderr)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
