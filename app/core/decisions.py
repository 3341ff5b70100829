"""The decisions a person (or a rule) takes on a file, as typed values with one codec.

A project keeps each decision as a row: an action name and JSON arguments (``encode``); loading
a file decodes them (``decode``) and replays them through the editor's own commands (``replay``),
so undo works after a reopen as it did before. The editor, batch and carried-over decisions all
make these values; nothing else spells the action names.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core import commands
from app.core.checks import SPEAKER_DASHES
from app.core.errors import PunctumError
from app.core.history import Decider, History, Step
from app.core.model import Casing, Document, Source, Suggestion
from app.core.recut_cues import CueCut


class DecisionError(PunctumError):
    """A recorded decision this version cannot read."""


@dataclass(frozen=True)
class Accept:
    suggestion: int


@dataclass(frozen=True)
class Reject:
    suggestion: int


@dataclass(frozen=True)
class AcceptMany:
    suggestions: tuple[int, ...]


@dataclass(frozen=True)
class RejectMany:
    suggestions: tuple[int, ...]


@dataclass(frozen=True)
class Settle:
    """The triage rule's settlement: ``reopen`` goes back to the queue, ``accept`` is accepted."""

    reopen: tuple[int, ...]
    accept: tuple[int, ...]


@dataclass(frozen=True)
class SetMark:
    word: int
    mark: str


@dataclass(frozen=True)
class ChangeMark:
    suggestion: int
    mark: str


@dataclass(frozen=True)
class EditWord:
    word: int
    text: str


@dataclass(frozen=True)
class Recut:
    """The cues cut again at sentence ends: the cut as it was made and approved (``cut``), so a
    reopened project has exactly those cues whatever the re-cut's rules are by then; projects of
    earlier versions hold only the words' times as heard then (ms; None: not heard), from which
    the cues are cut again."""

    times: tuple[tuple[int, int] | None, ...] = ()
    cut: tuple[CueCut, ...] = ()


@dataclass(frozen=True)
class Restyle:
    """The gaps nobody had decided, read again with the house style after a person's decision
    (``commands.restyle``): the model's mark suggestions ``put`` in place (or added), those
    ``drop``ped, and the triage rule's settlement after it. Kept as what it did, not how, so a
    reopened project shows what the person saw whatever the style's rules are by then."""

    reopen: tuple[int, ...]
    put: tuple[Suggestion, ...]
    drop: tuple[int, ...]
    accept: tuple[int, ...]
    #: Part of the person's decision before it (undone with it), rather than a step of its own
    #: (a style given or reset, a policy changed).
    joins: bool = True
    #: Suggestions that keep their mark and take a new confidence: (id, confidence), kept apart
    #: from ``put`` so that a project holds a number, not a whole suggestion, for each.
    recalibrate: tuple[tuple[int, float], ...] = ()
    #: What the step is called where it is not part of a decision ("" for the rule's settlement).
    named: str = ""


@dataclass(frozen=True)
class Undo:
    pass


@dataclass(frozen=True)
class Redo:
    pass


Decision = (
    Accept
    | Reject
    | AcceptMany
    | RejectMany
    | Settle
    | Restyle
    | SetMark
    | ChangeMark
    | EditWord
    | Recut
    | Undo
    | Redo
)

_NAMES: dict[type[Any], str] = {
    Accept: "accept",
    Reject: "reject",
    AcceptMany: "accept_many",
    RejectMany: "reject_many",
    Settle: "settle",
    Restyle: "restyle",
    SetMark: "set_mark",
    ChangeMark: "change_mark",
    EditWord: "edit_word",
    Recut: "recut",
    Undo: "undo",
    Redo: "redo",
}
_TYPES = {name: kind for kind, name in _NAMES.items()}
#: The action names a project's decision rows may hold.
ACTIONS = tuple(_NAMES.values())


#: How a decision's field is read back from JSON, by its annotation.
_FIELD_READERS: dict[str, Any] = {
    "int": int,
    "str": str,
    "tuple[int, ...]": lambda values: tuple(int(i) for i in values),
}


#: What a restyle keeps of each model suggestion it puts in place, besides its readings.
_SUGGESTION_FIELDS = ("id", "gap", "mark", "confidence", "probabilities", "evidence")


def _suggestion_json(suggestion: Suggestion) -> dict[str, Any]:
    fields = {name: getattr(suggestion, name) for name in _SUGGESTION_FIELDS}
    # A capital the person's answers propose (``services.learnt_capitals``) says which.
    casing = {"casing": suggestion.casing.value} if suggestion.casing is not None else {}
    return fields | {"readings": {k: list(v) for k, v in suggestion.readings.items()}} | casing


def _confidence(value: object) -> float:
    confidence = float(value)  # type: ignore[arg-type]
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence {confidence}")
    return confidence


def _suggestion_of(data: dict[str, Any]) -> Suggestion:
    """A model suggestion (a mark, or a capital) as ``_suggestion_json`` wrote it."""
    confidence = _confidence(data["confidence"])
    return Suggestion(
        int(data["id"]),
        int(data["gap"]),
        str(data["mark"]),
        confidence,
        Source.MODEL,
        {str(k): float(v) for k, v in dict(data["probabilities"]).items()},
        evidence=str(data["evidence"]),
        readings={str(k): (str(v[0]), float(v[1])) for k, v in dict(data["readings"]).items()},
        casing=Casing(data["casing"]) if data.get("casing") is not None else None,
    )


def _confidences_json(recalibrate: Sequence[tuple[int, float]]) -> dict[str, Any]:
    """A re-reading's new confidences as a row keeps them: by id order, each id as its step from
    the one before (a long call's re-reading moves a thousand; the project keeps every one)."""
    if not recalibrate:
        return {}
    pairs = sorted(recalibrate)
    ids = [number for number, _ in pairs]
    return {
        "confidences": {
            "steps": [b - a for a, b in zip([0, *ids], ids, strict=False)],
            "to": [c for _, c in pairs],
        }
    }


def _confidences_of(arguments: dict[str, Any]) -> tuple[tuple[int, float], ...]:
    """The new confidences ``_confidences_json`` wrote, or (rows of earlier versions) the
    ``"recalibrate"`` list of pairs."""
    if "confidences" not in arguments:
        return tuple((int(i), _confidence(c)) for i, c in arguments.get("recalibrate", []))
    moved = arguments["confidences"]
    ids = itertools.accumulate(int(step) for step in moved["steps"])
    return tuple((number, _confidence(c)) for number, c in zip(ids, moved["to"], strict=True))


def encode(decision: Decision) -> tuple[str, dict[str, Any]]:
    """A decision as a project row stores it: its action name and JSON-ready arguments."""
    if isinstance(decision, Restyle):
        return _NAMES[Restyle], {
            "reopen": list(decision.reopen),
            "put": [_suggestion_json(s) for s in decision.put],
            "drop": list(decision.drop),
            "accept": list(decision.accept),
            "joins": decision.joins,
        } | _confidences_json(decision.recalibrate) | ({"named": decision.named} if decision.named else {})
    if isinstance(decision, Recut):
        if decision.cut:
            # A cut's speaker dash is written only where a cue has one (rows stay as they were).
            cut = [
                [c.words, c.start, c.end, list(c.lines), *([c.dash] if c.dash else [])] for c in decision.cut
            ]
            return _NAMES[Recut], {"cut": cut}
        return _NAMES[Recut], {"times": list(decision.times)}
    arguments = {
        name: list(value) if isinstance(value, tuple) else value for name, value in vars(decision).items()
    }
    return _NAMES[type(decision)], arguments


def _recorded_dash(written: list[Any]) -> str:
    """A recorded cue's speaker dash (none where the row has none); one not known is unreadable."""
    if not written:
        return ""
    if len(written) > 1 or written[0] not in SPEAKER_DASHES.values():
        raise ValueError(f"a speaker dash of {written!r}")
    return str(written[0])


def decode(action: str, arguments: dict[str, Any]) -> Decision:
    """The decision a project row holds; a ``DecisionError`` for one this version cannot read."""
    kind = _TYPES.get(action)
    if kind is None:
        raise DecisionError(f"unknown action {action!r}")
    try:
        if kind is Restyle:
            reopen, drop, accept = (
                tuple(int(i) for i in arguments[key]) for key in ("reopen", "drop", "accept")
            )
            put = tuple(_suggestion_of(s) for s in arguments["put"])
            recalibrate = _confidences_of(arguments)
            joins, named = bool(arguments.get("joins", True)), str(arguments.get("named", ""))
            return Restyle(reopen, put, drop, accept, joins, recalibrate, named)
        if kind is Recut:
            if arguments.get("cut"):
                cut = tuple(
                    CueCut(int(n), int(a), int(b), tuple(int(k) for k in lines), _recorded_dash(dash))
                    for n, a, b, lines, *dash in arguments["cut"]
                )
                return Recut(cut=cut)
            return Recut(tuple(None if t is None else (int(t[0]), int(t[1])) for t in arguments["times"]))
        # The rest hold plain fields, written as they are by ``encode``: read back by their annotation.
        values = (
            _FIELD_READERS[str(field.type)](arguments[field.name]) for field in dataclasses.fields(kind)
        )
        return kind(*values)  # type: ignore[no-any-return]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as error:
        raise DecisionError(f"{action}: unreadable arguments ({error})") from None


def step_of(document: Document, decision: Decision) -> Step | None:
    """The editor's command a decision stands for, as a step on ``document``; None for undo and redo."""
    match decision:
        case Accept(suggestion):
            return commands.accept(document, suggestion)
        case Reject(suggestion):
            return commands.reject(document, suggestion)
        case AcceptMany(suggestions):
            return commands.accept_many(document, suggestions)
        case RejectMany(suggestions):
            return commands.reject_many(document, suggestions)
        case Settle(reopen, accept):
            return commands.settle(document, reopen, accept)
        case Restyle(reopen, put, drop, accept, joins, recalibrate, named):
            alone = None if joins else (named or commands.SETTLE_NAME)
            return commands.restyle(document, reopen, put, drop, accept, recalibrate, alone)
        case Recut(times, cut):
            return commands.recut_as(document, cut) if cut else commands.recut(document, times)
        case SetMark(word, mark):
            return commands.set_mark(document, word, mark)
        case ChangeMark(suggestion, mark):
            return commands.change_mark(document, suggestion, mark)
        case EditWord(word, text):
            return commands.edit_word(document, word, text)
    return None


def replay(
    document: Document,
    history: History,
    decision: Decision,
    by: Decider = Decider.PERSON,
    row: int | None = None,
) -> None:
    """Apply one recorded decision (the project's ``row``) through the editor's own commands, as
    taken ``by`` whoever recorded it: only a person's teach the house style."""
    if isinstance(decision, Undo):
        history.undo()
    elif isinstance(decision, Redo):
        history.redo()
    else:
        step = step_of(document, decision)
        assert step is not None
        history.do(dataclasses.replace(step, by=by, row=row))
