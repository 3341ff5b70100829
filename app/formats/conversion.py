"""What a conversion between caption formats cannot carry over, said per cue before it is written.

ASS/SSA override tags other than italics, bold, underline and strike-out (which pysubs2 turns into
SubRip's tags), and its comment lines, have no place in SRT, WebVTT or SBV; nor have a TTML
paragraph's region and attributes, or its styled spans; nor have an SCC caption's row positions
and mid-row styles. Converting into ASS/SSA or TTML keeps what the other format had (pysubs2 turns
tags into styles), so nothing is said of that. Writing SCC, even an SCC file as it was read, is said
what it changes on screen (``scc_writer.changes``): a caption shown later, a row past 32 columns.
"""

from __future__ import annotations

import re

from app.core.model import Document
from app.formats import cea608, scc_writer

#: ASS/SSA overrides pysubs2 turns into SubRip tags: ``\i1``, ``\b0``, ``\u1``, ``\s1``.
_KEPT_OVERRIDE = re.compile(r"\\[ibus][01]?")
_OVERRIDE = re.compile(r"\{\\[^{}]*\}")
_ASS_ESCAPE = re.compile(r"\\h")
_COMMENT = re.compile(r"^\s*Comment\s*:", re.IGNORECASE | re.MULTILINE)
_SPAN = re.compile(r"<(?:[\w.-]+:)?span\b[^<>]*>")
_ATTRIBUTE = re.compile(r"\s((?:[\w.-]+:)?[\w.-]+)\s*=\s*(\"[^\"]*\"|'[^']*')")
#: A TTML paragraph's attributes that every format has: its id and times.
_TIMING_ATTRIBUTES = frozenset(("xml:id", "begin", "end", "dur"))
_NAMES = {
    "srt": "SRT",
    "vtt": "WebVTT",
    "sbv": "SBV",
    "ass": "ASS",
    "ssa": "SSA",
    "ttml": "TTML",
    "scc": "SCC",
}


def left_out(document: Document, format: str) -> list[str]:
    """What writing ``document`` as ``format`` leaves out or changes beyond marks and capitals,
    one line a cue (and one for comment lines): empty where it keeps everything."""
    if format == "scc" and document.cues:
        from app.formats import render_document

        return [
            *_other_left_out(document, "SCC"),
            *scc_writer.changes(document, render_document(document, "scc")),
        ]
    if format == document.format or format == "txt":
        return []
    return _other_left_out(document, _NAMES.get(format, format))


def _other_left_out(document: Document, target: str) -> list[str]:
    if document.format == "scc" and target != "SCC":
        return _scc_left_out(document, target)
    if document.format in ("ass", "ssa") and target not in ("ASS", "SSA"):
        return _ass_left_out(document, target)
    if document.format == "ttml":
        return _ttml_left_out(document, target)
    return []


def _scc_left_out(document: Document, target: str) -> list[str]:
    said = [f"the captions' row positions have no place in {target}: left out"]
    styles = cea608.tables().MID_ROW_CODES
    for number, cue in enumerate(document.cues, start=1):
        if any(code in styles for code in cea608.read_codes(cue.timing_line or "").words):
            said.append(f"cue {number}: its mid-row style has no place in {target}: left out")
    return said


def _ass_left_out(document: Document, target: str) -> list[str]:
    said = []
    for number, cue in enumerate(document.cues, start=1):
        text = cue.text()
        dropped = [
            block
            for block in _OVERRIDE.findall(text)
            if any(tag and not _KEPT_OVERRIDE.fullmatch("\\" + tag) for tag in block[2:-1].split("\\"))
        ]
        if _ASS_ESCAPE.search(text):
            dropped.append("\\h")
        if dropped:
            said.append(f"cue {number}: {' '.join(dropped)} has no place in {target}: left out")
    comments = len(_COMMENT.findall(document.preamble + "".join(c.after_text or "" for c in document.cues)))
    if comments:
        lines = "1 Comment line has" if comments == 1 else f"{comments} Comment lines have"
        said.append(f"{lines} no place in {target}: left out")
    return said


def _ttml_left_out(document: Document, target: str) -> list[str]:
    said = []
    for number, cue in enumerate(document.cues, start=1):
        attributes = [
            f"{name}={value}"
            for name, value in _ATTRIBUTE.findall(cue.timing_line or "")
            if name not in _TIMING_ATTRIBUTES
        ]
        spans = len(_SPAN.findall(cue.text()))
        if spans:
            attributes.append(f"{spans} styled span{'s' if spans > 1 else ''}")
        if attributes:
            said.append(f"cue {number}: {', '.join(attributes)} has no place in {target}: left out")
    return said
