"""Casing of a punctuation model on held-out data, as the product applies it; prints JSON.

ASR captions arrive lowercase. The product capitalises a word when the model's most likely mark
before it ends a sentence, or when the casing head gives it a capital with probability above one
half, or when the language always writes the word with one (English days, months and "I";
`app/core/orthography.py`). Scored per language against the reference's capitals (the Earnings-22 test calls for
English, the second half of each UD dev file for the others): precision, recall and F1 of
capitals, and the capitals proposed inside a predicted sentence that the reference does not have
("Saturday, A few"), the mistake an editor notices most. With `--dev`, the Earnings-22 dev calls
and the first UD halves instead: the data casing changes are judged on.

Run: `.venv/bin/python -m tests.benchmarks.eval_casing [--model DIR] [--dev] [--without-word-rule]`
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.core.marks import SENTENCE_END_CLASSES
from app.core.orthography import always_capitalised
from app.services.model import Punctuator
from app.services.suggestions import CAPITAL_PROBABILITY
from app.training import data as corpora
from tests.benchmarks.eval_model import UD
from tests.conftest import SHARED_DATA


def documents(root: Path, part: str) -> dict[str, list[corpora.LabelledText]]:
    split = corpora.earnings_split(root / "earnings22" / "force_aligned_nlp_references")
    sets = {"en": [corpora.read_rev(path) for path in split[part]]}
    for language, path in UD.items():
        sets[language] = [corpora.read_conllu(root / "ud" / path, language, part)]
    return sets


def casing_scores(
    documents: list[corpora.LabelledText], punctuator: Punctuator, rule: bool = True
) -> dict[str, float]:
    right = proposed = wanted = wrong_inside = 0
    for document in documents:
        marks, casing = punctuator.probabilities(document.words, document.language)
        for index, case in enumerate(document.casing):
            if case == corpora.UNKNOWN:
                continue
            before = marks[index - 1] if index else None
            starts = before is None or max(range(len(before)), key=before.__getitem__) in SENTENCE_END_CLASSES
            inside = casing[index][1] + casing[index][2] > CAPITAL_PROBABILITY or (
                rule and always_capitalised(document.words[index], document.language)
            )
            capital, reference_capital = starts or inside, case in (1, 2)
            right += capital and reference_capital
            proposed += capital
            wanted += reference_capital
            wrong_inside += inside and not starts and not reference_capital
    return {
        "precision": round(100 * right / proposed, 1) if proposed else 0.0,
        "recall": round(100 * right / wanted, 1) if wanted else 0.0,
        "f1": round(200 * right / (proposed + wanted), 1) if proposed + wanted else 0.0,
        "capitals": wanted,
        "wrong_capitals_inside_sentences": wrong_inside,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--data", default=str(SHARED_DATA))
    parser.add_argument("--dev", action="store_true", help="score the dev data instead of the test data")
    parser.add_argument(
        "--without-word-rule",
        action="store_true",
        help="the casing model alone, without the language's word list",
    )
    args = parser.parse_args()
    root = Path(args.data)
    if not root.is_dir():
        print(f"eval_casing: no data folder at {root}", file=sys.stderr)
        return 3
    punctuator = Punctuator(args.model)
    part = "dev" if args.dev else "test"
    rule = not args.without_word_rule
    results: dict[str, object] = {"model": args.model or "shipped default", "data": part, "word_rule": rule}
    for language, texts in documents(root, part).items():
        results[language] = casing_scores(texts, punctuator, rule)
        print(language, results[language], file=sys.stderr)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
