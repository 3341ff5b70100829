"""``punctum punctuate`` as a use case: a file analysed, what the policy settles accepted,
sentence starts capitalised, and the suggestions as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.core import commands
from app.core.commands import MORE_LIKELY_RIGHT as MORE_LIKELY_RIGHT  # re-exported for the command line
from app.core.commands import Apply
from app.core.commands import ApplyPolicy as ApplyPolicy
from app.core.gap_features import GapMeasure
from app.core.history import History
from app.core.model import Document, Source, Suggestion
from app.core.triage import PRECISION_TARGET as PRECISION_TARGET  # re-exported for the command line
from app.core.triage import TARGET_RANGE as TARGET_RANGE
from app.core.triage import about_wrong
from app.services.analysis import AnalysisReport, AnalysisRequest, analyse
from app.services.captions_export import capitalise_sentences

if TYPE_CHECKING:
    from app.ml.house_style import HouseStyle
    from app.services.model import Punctuator


def apply_suggestions(
    document: Document, history: History, policy: ApplyPolicy, reference_given: bool = False
) -> list[int]:
    """Accept, as one step, what ``policy`` settles without review (``commands.accept_confident``;
    ``reference_given``: whether the file was given a reference transcript); the ids accepted."""
    ids = commands.accept_confident(document.suggestions, policy, reference_given)
    if ids:
        history.do(commands.accept_many(document, ids))
    return ids


@dataclass
class PunctuateOutcome:
    """A file punctuated as ``punctum punctuate`` does it."""

    document: Document  # with the accepted suggestions applied and sentence starts capitalised
    suggestions: list[Suggestion]
    applied: int
    report: AnalysisReport
    #: Of what was applied, how many the model's own may be wrong (the sum of their chances).
    may_be_wrong: float = 0.0
    #: What was measured at each word's gap, with the words' heard times, when there was media.
    measures: list[GapMeasure] | None = None

    def suggestions_json(self) -> str:
        """Every suggestion with its word, cue and chances, after the report: ``--suggestions``."""
        document = self.document
        cue_of = [ref.cue for ref in (document.locate(i) for i in range(document.word_count))]
        items = [
            {
                "id": s.id,
                "word_index": s.gap,
                "word": document.word(s.gap).text,
                "cue": cue_of[s.gap] + 1,
                "mark": s.mark,
                "casing": s.casing.value if s.casing else None,
                "probabilities": s.probabilities,
                "confidence": s.confidence,
                "source": s.source.value,
                "evidence": s.evidence if s.source is Source.MODEL else "reference",
                **(
                    {"readings": {k: {"mark": m, "probability": p} for k, (m, p) in s.readings.items()}}
                    if s.readings
                    else {}
                ),
                "status": s.status.value,
            }
            for s in document.suggestions
        ]
        listed = {**self.report.as_json(), "suggestions": items}
        return json.dumps(listed, indent=2, ensure_ascii=False) + "\n"


def punctuate_file(
    request: AnalysisRequest,
    punctuator: Punctuator,
    policy: ApplyPolicy,
    style: HouseStyle | None = None,
) -> PunctuateOutcome:
    """Analyse one file, then accept what ``policy`` settles and capitalise sentence starts.
    ``style``: a house style the model's suggestions are read with first (``restyle.styled``)."""
    analysis = analyse(request, punctuator).with_style(style)
    document, report, suggestions = analysis.document, analysis.report, analysis.suggestions
    known = {s.id for s in document.suggestions}  # the reference's, there already
    document.add_suggestions([s for s in suggestions if s.id not in known])
    history = History(document)
    applied = apply_suggestions(document, history, policy, reference_given=request.reference is not None)
    if policy.how is not Apply.NONE:
        capitalise_sentences(document, report.language)
    wrong = about_wrong(document.suggestions, applied)
    return PunctuateOutcome(document, suggestions, len(applied), report, wrong, analysis.measures)
