"""Learning the house style from a person's decisions, and reading the rest of a file again with it.

Every gap a person decided (accepted, turned down, another mark, a mark set by hand) is an example
for ``app.ml.house_style``; the style of a project is fitted on the examples of all its files,
starting from the style file it was given (if any). After each decision the gaps nobody has decided
are read again (``restyle``): a mark may stop or start being proposed, confidences move, and the
triage rule settles whatever now meets its target. A gap a person decided is never touched, and the
re-reading is one step with the decision, so undoing the decision undoes both.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.core.decisions import Restyle
from app.core.gap_readings import GapReading
from app.core.history import Decider, History
from app.core.marks import MODEL_MARKS, model_class
from app.core.model import Document, Evidence, Source, Status, Suggestion, Word
from app.core.triage import TriagePolicy, settled_by_rule, triage
from app.ml.house_style import HouseStyle, Proposal, StyleError, StyleExample
from app.ml.style_file import style_json, style_of_json
from app.ml.style_fit import PRIORS, Priors, fit_style
from app.services.learnt_capitals import CapitalCount, recased_again, respelt
from app.services.suggestions import model_word, open_gap, reader_choice
from app.services.typography import render_mark
from app.store.errors import ProjectError
from app.store.project import DONE, Project

#: A confidence moved by less than this is not worth a change in the review list: at 0.005 every
#: decision recalibrated nearly every pending gap (each number kept), for a change no one reads.
_CONFIDENCE_STEP = 0.02
#: A proposal waiting for a person takes another mark only where the style makes that mark this
#: much likelier than the one shown: a gap whose two marks are close would flip with every answer.
FLIP_MARGIN = 0.15


@dataclass(frozen=True)
class Decided:
    """What the steps in effect say of a file's gaps, read in one pass: the class of mark each word
    had before any decision, the gaps whose mark a person decided, and the suggestions the triage
    rule settled that still stand."""

    original: list[int]
    settled: set[int]
    #: Per gap a person decided, the project's row of their decision there (None: not recorded).
    taught_at: dict[int, int | None]
    #: What the person's answers say of words' capitals (given by the caller, who knows the
    #: project), and the words whose letters a step changed (``services.learnt_capitals``).
    capitals: dict[str, CapitalCount] = dataclasses.field(default_factory=dict)
    respelt: set[int] = dataclasses.field(default_factory=set)

    @property
    def by_person(self) -> set[int]:
        return set(self.taught_at)


@dataclass
class _WordView:
    """What the re-reading asks of each word of a document, kept between decisions and brought up
    to date where a word changed: its words, whether the model may propose a mark after each
    (``open_gap``), the next word as the model reads it, and the class of each word's mark."""

    words: list[Word]
    open: list[bool]
    following: list[str]
    classes: list[int]

    def refresh(self, index: int) -> None:
        words = self.words
        self.classes[index] = model_class(words[index].mark) if words[index].mark else 0
        for gap in (index - 1, index):
            if 0 <= gap < len(words):
                self.open[gap] = open_gap(words, gap)
                self.following[gap] = _next_word(words, gap)


#: Each open document's ``_WordView`` by the document's identity (a document is not hashable).
_VIEWS: dict[int, tuple[weakref.ref[Document], _WordView]] = {}


def _word_view(document: Document) -> _WordView:
    """The document's ``_WordView`` as its words now stand (a long file's every gap is read again
    after every decision; a decision changes a word or two)."""
    words = list(document.words())
    kept = _VIEWS.get(id(document))
    view = kept[1] if kept is not None and kept[0]() is document else None
    if view is None or len(view.words) != len(words):
        view = _WordView(words, [False] * len(words), [""] * len(words), [0] * len(words))
        changed: Iterable[int] = range(len(words))
    else:
        changed = [
            index for index, (was, now) in enumerate(zip(view.words, words, strict=True)) if was is not now
        ]
        view.words = words
    for index in changed:
        view.refresh(index)
    if len(_VIEWS) > 64:  # documents closed since
        for key in [key for key, (ref, _) in _VIEWS.items() if ref() is None]:
            del _VIEWS[key]
    _VIEWS[id(document)] = (weakref.ref(document), view)
    return view


def decided(document: Document, history: History) -> Decided:
    """``Decided`` of a file as its history stands, in one pass over the steps in effect."""
    original = list(_word_view(document).classes)
    for index, edit in history.first_word_edits().items():
        if index < len(original):
            original[index] = model_class(edit.before.mark)
    last = history.last_changes()
    by_rule = {suggestion_id: step.by is Decider.RULE for suggestion_id, step in last.items()}
    taught_at: dict[int, int | None] = {}
    for s in document.suggestions:
        step = last.get(s.id)
        mine = step is not None and step.by is Decider.PERSON
        if s.casing is None and (
            (s.source is Source.EDITOR and s.status is Status.ACCEPTED and (step is None or mine))
            or (mine and s.status is not Status.PENDING)
        ):
            rows = [r for r in (taught_at.get(s.gap), step.row if step else None) if r is not None]
            taught_at[s.gap] = max(rows, default=None)
    settled = settled_by_rule(document, history, by_rule)
    return Decided(original, settled, taught_at, respelt=respelt(document, history))


def _next_word(words: Sequence[Word], index: int) -> str:
    """The word after ``index`` as the model reads it ("" after the last)."""
    return model_word(words[index + 1]) if index + 1 < len(words) else ""


def style_examples(
    document: Document, history: History, readings: Sequence[GapReading] | None, state: Decided | None = None
) -> list[tuple[int, StyleExample]]:
    """The examples a file's decisions give: one per gap a person decided, in reading order, each
    with its gap."""
    words = list(document.words())
    if not readings or len(readings) != len(words):
        return []
    state = state or decided(document, history)
    original = state.original
    # A decided gap is never read again, so its model suggestion is the one put to the person.
    model = [s for s in document.suggestions if s.source is Source.MODEL and s.casing is None]
    shown = {s.gap: model_class(s.mark) for s in model}
    return [
        (
            gap,
            StyleExample(
                readings[gap],
                _next_word(words, gap),
                original[gap],
                model_class(words[gap].mark),
                document.language,
                shown.get(gap),
            ),
        )
        for gap in sorted(state.by_person)
    ]


def proposed_suggestion(
    proposal: Proposal, identity: int, gap: int, reading: GapReading, language: str
) -> Suggestion:
    """A model suggestion as ``suggestions_from`` makes one, from a style's proposal."""
    heard = reading.heard
    return Suggestion(
        identity,
        gap,
        render_mark(MODEL_MARKS[proposal.mark], language),
        round(proposal.confidence, 4),
        Source.MODEL,
        {render_mark(MODEL_MARKS[k], language): round(p, 4) for k, p in enumerate(proposal.distribution)},
        evidence=Evidence.HEARD
        if heard is not None
        else (Evidence.TIMING if reading.pause is not None else Evidence.TEXT),
        readings={}
        if heard is None
        else {"read": reader_choice(reading.read, language), "heard": reader_choice(heard, language)},
    )


def _slot(suggestion: Suggestion) -> tuple[int, bool]:
    """Where a suggestion stands: its gap, and whether for the capital after it or the mark."""
    return suggestion.gap, suggestion.casing is not None


def reopening(
    suggestions: Sequence[Suggestion], settled: set[int]
) -> tuple[set[tuple[int, bool]], list[int]]:
    """The slots (``_slot``) of the suggestions the triage rule ``settled``, and the reference's and
    the model's suggestions in them: what a new settlement reopens before it settles again."""
    slots = {_slot(s) for s in suggestions if s.id in settled}
    return slots, sorted(s.id for s in suggestions if _slot(s) in slots and s.source is not Source.EDITOR)


def pending_again(suggestions: Sequence[Suggestion], reopened: set[int]) -> list[Suggestion]:
    """``suggestions`` with those ``reopened`` pending, for the rule to settle them anew."""
    return [dataclasses.replace(s, status=Status.PENDING) if s.id in reopened else s for s in suggestions]


def restyle(
    document: Document,
    state: Decided,
    readings: Sequence[GapReading] | None,
    style: HouseStyle,
    policy: TriagePolicy | None,
    has_reference: bool,
    alone: str | None = None,
) -> Restyle | None:
    """The gaps no person decided (``state``: ``decided`` of the document), read again with
    ``style``, and the triage rule's settlement by ``policy`` (None: nothing settles) after it;
    None when that changes nothing."""
    words = list(document.words())
    if not readings or len(readings) != len(words):
        return None
    # Without a policy (a session that has not triaged) what the rule settled stays as it is.
    settled = state.settled if policy is not None else set()
    kept = set() if policy is not None else {s.gap for s in document.suggestions if s.id in state.settled}
    slots, reopen = reopening(document.suggestions, settled)
    reopened = set(reopen)
    put, drop, recalibrate = _read_again(document, state, readings, style, kept, reopened)
    capitals, recapitalised = recased_again(
        document,
        state.respelt,
        state.capitals,
        max([document.next_suggestion_id(), *(s.id + 1 for s in put)]),
    )
    put += capitals
    recalibrate += recapitalised
    accept: list[int] = []
    if policy is not None:
        changed = {s.id: s for s in put}
        by_id = {s.id: s for s in document.suggestions}
        changed |= {i: by_id[i].recalibrated(c, Status.PENDING) for i, c in recalibrate}
        dropped = set(drop)
        trial = [
            changed.get(s.id, s) for s in pending_again(document.suggestions, reopened) if s.id not in dropped
        ]
        trial += [s for s in put if s.id >= document.next_suggestion_id()]
        accept = sorted(triage(trial, policy, has_reference).accepted)
    if not put and not drop and not recalibrate and set(accept) == settled:
        return None
    # Only what changes: a settled suggestion that stays settled as it was is neither reopened nor
    # accepted again (on a long call the rule holds a thousand, and every decision re-reads).
    touched = {s.id for s in put} | set(drop) | {i for i, _ in recalibrate}
    still = set(accept)
    slot_of = {s.id: _slot(s) for s in document.suggestions}
    unchanged = slots - {slot_of[i] for i in settled if i not in still or i in touched}
    reopen = [i for i in reopen if slot_of[i] not in unchanged]
    accept = [i for i in accept if not (i in settled and slot_of[i] in unchanged)]
    joins, named = alone is None, alone or ""
    return Restyle(tuple(reopen), tuple(put), tuple(drop), tuple(accept), joins, tuple(recalibrate), named)


def _read_again(
    document: Document,
    state: Decided,
    readings: Sequence[GapReading],
    style: HouseStyle,
    kept: set[int],
    reopened: set[int],
) -> tuple[list[Suggestion], list[int], list[tuple[int, float]]]:
    """The open gaps no person decided (nor ``kept``, nor the reference's) read with ``style``:
    the model's suggestions to put (new, or with another mark), to drop, and to give another
    confidence; a suggestion ``reopened`` counts as pending."""
    view = _word_view(document)
    language = document.language or "en"
    referenced = {s.gap for s in document.suggestions if s.source is Source.REFERENCE and s.casing is None}
    current: dict[int, Suggestion] = {}
    for s in document.suggestions:
        pending = s.status is Status.PENDING or s.id in reopened
        if s.source is Source.MODEL and s.casing is None and pending:
            current.setdefault(s.gap, s)
    put: list[Suggestion] = []
    drop: list[int] = []
    recalibrate: list[tuple[int, float]] = []
    next_id = document.next_suggestion_id()
    # A gap anyone decided (a person, batch, the rule where it is not settling again) is not read
    # again: what stands there is theirs.
    decided_gaps = {
        s.gap
        for s in document.suggestions
        if s.casing is None and s.status is not Status.PENDING and s.id not in reopened
    }
    closed = state.by_person | kept | decided_gaps | referenced
    is_open = view.open
    gaps = [gap for gap in range(len(readings)) if is_open[gap] and gap not in closed]
    # The next word matters only to a style that has learnt something of words.
    following = (
        [view.following[gap] for gap in gaps] if style.word_bias or style.add_word_bias else [""] * len(gaps)
    )
    original = state.original
    proposals = style.proposals([readings[g] for g in gaps], following, [original[g] for g in gaps], language)
    for gap, proposal in zip(gaps, proposals, strict=True):
        reading = readings[gap]
        existing = current.get(gap)
        if proposal is None:
            if existing is not None:
                drop.append(existing.id)
            continue
        if existing is None:
            put.append(proposed_suggestion(proposal, next_id, gap, reading, language))
            next_id += 1
            continue
        if (
            render_mark(MODEL_MARKS[proposal.mark], language) == existing.mark
            and abs(round(proposal.confidence, 4) - existing.confidence) < _CONFIDENCE_STEP
        ):
            continue  # as it stands (most gaps, after most decisions): nothing to make
        wanted = proposed_suggestion(proposal, existing.id, gap, reading, language)
        if wanted.mark != existing.mark:
            shown = wanted.probabilities.get(existing.mark, 0.0)
            if wanted.probabilities.get(wanted.mark, 0.0) >= shown + FLIP_MARGIN:
                put.append(wanted)
        elif abs(wanted.confidence - existing.confidence) >= _CONFIDENCE_STEP:
            recalibrate.append((existing.id, wanted.confidence))
    return put, drop, recalibrate


def styled(
    document: Document,
    suggestions: list[Suggestion],
    readings: Sequence[GapReading] | None,
    style: HouseStyle,
    capitals: Mapping[str, CapitalCount] | None = None,
) -> list[Suggestion]:
    """A fresh analysis's ``suggestions`` of ``document`` (holding none of the model's yet) as
    ``style`` and the ``capitals`` taught read its gaps: what batch and ``--style`` start a file with."""
    if (style.neutral and not capitals) or not readings:
        return suggestions
    trial = Document(copy.deepcopy(document.cues), document.format, language=document.language)
    trial.add_suggestions(list(suggestions))
    history = History(trial)
    state = dataclasses.replace(decided(trial, history), capitals=dict(capitals or {}))
    if (change := restyle(trial, state, readings, style, None, False, alone="")) is None:
        return suggestions
    from app.core.decisions import step_of

    if (step := step_of(trial, change)) is not None:
        history.do(step)
    return list(trial.suggestions)


#: Where a project keeps the style it was given (``--style FILE``): the start its decisions move.
STYLE_SETTING = "house_style"


def given_style(project: Project) -> HouseStyle | None:
    """The style a project was given to start from, if any."""
    text = project.setting(STYLE_SETTING)
    if text is None or text == "null":
        return None
    try:
        return style_of_json(json.loads(text))
    except (ValueError, RecursionError, StyleError) as error:
        raise ProjectError(f"{project.path}: its house style is damaged ({error})") from None


def give_style(project: Project, style: HouseStyle | None) -> None:
    """Start the project's style from ``style`` (None: from the model's own, forgetting the one
    given). Its decisions still teach it."""
    project.set_setting(STYLE_SETTING, json.dumps(style_json(style)) if style is not None else "null")


#: Gaps whose decisions a reset of the style forgot, by file id: JSON ``{"3": [12, 40]}`` (as
#: projects of earlier versions reset; a reset now forgets decisions, ``RESET_SETTING``).
FORGOTTEN_SETTING = "house_style.forgotten"
#: The project's last decision row when its style was last reset: the decisions up to it, on any
#: file, teach nothing; a gap decided again after it teaches again.
RESET_SETTING = "house_style.reset_at"


def reset_at(project: Project) -> int:
    text = project.setting(RESET_SETTING)
    try:
        return int(text) if text else 0
    except ValueError:
        raise ProjectError(f"{project.path}: its house style's reset is damaged") from None


def forgotten_gaps(project: Project) -> dict[int, set[int]]:
    text = project.setting(FORGOTTEN_SETTING)
    try:
        return {int(k): {int(g) for g in v} for k, v in json.loads(text).items()} if text else {}
    except (ValueError, TypeError, AttributeError):
        raise ProjectError(f"{project.path}: its house style's reset is damaged") from None


def file_examples(
    project: Project,
    file_id: int,
    document: Document | None = None,
    history: History | None = None,
    readings: Sequence[GapReading] | None = None,
    state: Decided | None = None,
) -> list[StyleExample]:
    """The examples one file of a project gives, as its decisions stand (from ``document``,
    ``history`` and ``readings`` when the caller has them open), less those a reset forgot."""
    readings = readings if readings is not None else project.gap_readings(file_id)
    if not readings:
        return []
    if document is None or history is None:
        from app.services.projects import load_document

        document, history = load_document(project, file_id)
    state = state or decided(document, history)
    forgotten = forgotten_gaps(project).get(file_id, set())
    reset = reset_at(project)

    def remembered(gap: int) -> bool:
        row = state.taught_at.get(gap)
        return gap not in forgotten and (row is None or row > reset)

    return [e for gap, e in style_examples(document, history, readings, state) if remembered(gap)]


def reset_style(project: Project) -> None:
    """Start the project's style again from the model's own: the style it was given and what its
    decisions so far taught are forgotten (by decision: a gap decided again teaches again);
    decisions from now on teach it again. A damaged style or reset is simply replaced: a reset is
    the way out of one."""
    project.set_setting(RESET_SETTING, str(project.last_decision()))
    project.set_setting(FORGOTTEN_SETTING, "{}")  # an earlier version's gaps: all decided before now
    give_style(project, None)


def project_examples(project: Project, without: int | None = None) -> list[StyleExample]:
    """The examples of every processed file of a project (but file ``without``); only the files a
    person decided something in are replayed, the others have none to give."""
    return [
        example
        for entry in project.files()
        if entry.id != without and entry.state == DONE and project.decided_by_person(entry.id)
        for example in file_examples(project, entry.id)
    ]


def project_style(
    project: Project, examples: Sequence[StyleExample] | None = None, priors: Priors = PRIORS
) -> HouseStyle:
    """The project's house style: the style it was given, moved by the decisions on all its files
    (``examples``, when the caller has them already) as far as ``priors`` let them."""
    return fit_style(
        project_examples(project) if examples is None else examples, given_style(project), priors
    )
