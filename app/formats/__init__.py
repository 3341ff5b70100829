"""Reading and writing caption files: SRT, WebVTT, SBV, ASS/SSA, TTML/DFXP, SCC and plain text.

``read_document`` never raises anything but ``FormatError`` for a bad file; ``write_document``
writes atomically and refuses to replace the file the document came from unless asked.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict, Unpack

from app.core.errors import PunctumError
from app.core.model import Document
from app.formats import ass, sbv, scc, scc_writer, srt, text, ttml, vtt
from app.formats.atomic import write_together
from app.formats.common import timing_example
from app.formats.encoding import decode, encode
from app.formats.errors import FormatError

__all__ = [
    "CAPTION_SUFFIXES",
    "FORMATS",
    "FormatError",
    "WriteError",
    "format_of",
    "parse_document",
    "read_document",
    "render_document",
    "write_document",
]

#: The largest caption file read: some 30 hours of film subtitles, or a word-timed VTT of a
#: working week; parsing it takes a few seconds and well under 1 GB. Larger input is refused
#: before it is read rather than left to exhaust the machine.
MAX_FILE_BYTES = 5_000_000
#: The longest line of an SRT or VTT file. Caption lines hold some 40 characters; a line this long
#: is a damaged or a different file.
MAX_LINE_CHARACTERS = 10_000

#: File extension -> format name.
FORMATS = {
    ".srt": "srt",
    ".vtt": "vtt",
    ".sbv": "sbv",
    ".ass": "ass",
    ".ssa": "ssa",
    ".ttml": "ttml",
    ".dfxp": "ttml",
    ".scc": "scc",
    ".txt": "txt",
}
#: The extensions of caption files (timed cues), as ``FORMATS`` reads them.
CAPTION_SUFFIXES = tuple(suffix for suffix, name in FORMATS.items() if name != "txt")
LINE_ENDINGS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


class WriteError(PunctumError):
    """A document that cannot be written where or how it was asked."""


def format_of(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        known = ", ".join(FORMATS)
        raise FormatError(
            path, None, f"unsupported file type {path.suffix or '(none)'!r}; Punctum reads {known}"
        ) from None


def read_document(path: Path | str, format: str | None = None) -> Document:
    path = Path(path)
    format = format or format_of(path)
    return parse_document(read_bytes(path), format, path)


def read_bytes(path: Path) -> bytes:
    """A caption file's bytes; a path that is not a readable regular file is a ``FormatError``."""
    if path.exists() and not path.is_file() and not path.is_dir():
        # A pipe or a device would block the read, or never end it.
        raise FormatError(path, None, "is not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FormatError(path, None, _too_large(size))
        return path.read_bytes()
    except IsADirectoryError:
        raise FormatError(path, None, "is a folder, not a caption file") from None
    except OSError as error:
        raise FormatError(path, None, error.strerror or str(error)) from None


def _too_large(size: int) -> str:
    return f"is {size / 1e6:.1f} MB; Punctum reads caption files of up to {MAX_FILE_BYTES / 1e6:.0f} MB"


def _check_line_lengths(text: str, path: Path | None) -> None:
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > MAX_LINE_CHARACTERS:
            raise FormatError(
                path,
                number,
                f"a line of {len(line):,} characters; caption lines are at most {MAX_LINE_CHARACTERS:,}",
            )


def parse_document(data: bytes, format: str, path: Path | None = None) -> Document:
    if len(data) > MAX_FILE_BYTES:
        raise FormatError(path, None, _too_large(len(data)))
    decoded = decode(data, path)
    warnings = list(decoded.warnings)
    if decoded.mixed_line_endings:
        warnings.append("mixed line endings; all will be written as the most common one")
    readers = {
        "srt": srt.read,
        "vtt": vtt.read,
        "sbv": sbv.read,
        "ass": ass.read,
        "ssa": ass.read,
        "ttml": ttml.read,
        "scc": scc.read,
    }
    if format in readers:
        _check_line_lengths(decoded.text, path)
        cues, preamble, found = readers[format](decoded.text, path)
        warnings += found
    elif format == "txt":
        cues, preamble = text.read(decoded.text)
    else:
        raise FormatError(path, None, f"unknown format {format!r}")
    return Document(
        cues=cues,
        format=format,
        source_path=path,
        encoding=decoded.encoding,
        bom=decoded.bom,
        line_ending=decoded.line_ending,
        preamble=preamble,
        timing_example=timing_example(cues),
        break_tag=ttml.break_tag(decoded.text) if format == "ttml" else None,
        warnings=warnings,
    )


def render_document(document: Document, format: str | None = None) -> str:
    """The document's text in ``format`` (its own by default), with ``\\n`` line ends."""
    format = format or document.format
    if format != document.format and document.format == "txt":
        raise WriteError(f"plain text has no timings, so it cannot be written as {format.upper()}")
    if document.format in ("ass", "ssa") and format not in ("ass", "ssa", "txt"):
        # Override tags, positions and comments have no place in SRT, VTT or SBV: pysubs2
        # converts what they can hold, and the document is written from that.
        document = parse_document(ass.as_subrip(document).encode(), "srt")
    elif document.format == "ttml" and format not in ("ttml", "txt"):
        # Spans and regions have no place in the others: the words, marks and line breaks go.
        document = parse_document(ttml.as_subrip(document).encode(), "srt")
    elif document.format == "scc" and format not in ("scc", "txt"):
        # Positions and mid-row styles have no place in the others: the rows go as lines.
        document = parse_document(scc.as_subrip(document).encode(), "srt")
    writer = {
        "srt": srt.write,
        "vtt": vtt.write,
        "sbv": sbv.write,
        "ass": ass.write,
        "ssa": lambda document: ass.write(document, "ssa"),
        "ttml": _ttml,
        "scc": _scc,
        "txt": text.write,
    }.get(format)
    if writer is None:
        raise WriteError(f"unknown format {format!r}")
    return writer(document)


def _ttml(document: Document) -> str:
    """TTML of a TTML document as read; of another format's, written by pysubs2 (SubRip's and
    ASS's italics, bold and underline become styles)."""
    if document.format == "ttml":
        return ttml.write(document)
    import pysubs2

    source = (
        ass.write(document, document.format) if document.format in ("ass", "ssa") else srt.write(document)
    )
    written = str(pysubs2.SSAFile.from_string(source).to_string("ttml"))
    if document.format not in ("ass", "ssa"):
        # SubRip's and WebVTT's entities are characters there (``cuetext`` reads them so), which
        # pysubs2 would escape once more ("&amp;amp;").
        written = ttml.entities_kept(written)
    return written.replace("<br />", "<br/>")  # the spelling ``ttml`` reads as a line break


def _scc(document: Document) -> str:
    """SCC of an SCC document as read; of another format's, or a re-cut's, written by pycaption
    from WebVTT."""
    if scc.as_read(document):
        return scc_writer.write(document)
    if document.format == "scc":
        document = parse_document(scc.as_subrip(document).encode(), "srt")
    return scc_writer.written_anew(render_document(document, "vtt"))


class WriteOptions(TypedDict, total=False):
    """How a document is written where not as it was read: ``format`` (else the path's extension),
    ``encoding``, ``line_ending`` ("lf", "crlf" or "cr"), and ``replace_source`` to write over the
    file it was read from."""

    format: str | None
    encoding: str | None
    line_ending: str | None
    replace_source: bool


def write_document(document: Document, path: Path | str, **options: Unpack[WriteOptions]) -> None:
    """Write ``document`` to ``path`` atomically, as it was read unless ``options`` say otherwise."""
    path = Path(path)
    write_file(path, document_bytes(document, path, **options))
    if document.source_path is not None and path.resolve() == document.source_path.resolve():
        document.mark_saved()


def document_bytes(
    document: Document,
    path: Path | str,
    *,
    format: str | None = None,
    encoding: str | None = None,
    line_ending: str | None = None,
    replace_source: bool = False,
) -> bytes:
    """What ``write_document`` would write to ``path``, for writing with other files (``write_files``)."""
    path = Path(path)
    format = format or format_of(path)
    source = document.source_path
    if source is not None and not replace_source and path.exists() and path.resolve() == source.resolve():
        raise WriteError(
            f"{path}: will not overwrite the input file; choose another output or ask to replace it"
        )
    target_encoding = encoding or document.encoding
    try:
        codecs.lookup(target_encoding)
    except LookupError:
        raise WriteError(f"unknown encoding {target_encoding!r}") from None
    ending = document.line_ending if line_ending is None else LINE_ENDINGS.get(line_ending, line_ending)
    if ending not in LINE_ENDINGS.values():
        raise WriteError(f"unknown line ending {line_ending!r}; use lf, crlf or cr")
    content = render_document(document, format)
    try:
        data = encode(content, target_encoding, document.bom and encoding is None, ending)
    except UnicodeEncodeError as error:
        bad = error.object[error.start : error.end]
        raise WriteError(
            f"{path}: {bad!r} cannot be written in {target_encoding}; write it as UTF-8 instead"
        ) from None
    return data


def write_file(path: Path | str, data: bytes) -> None:
    """Write ``data`` atomically; a failure is a one-line ``WriteError``."""
    try:
        write_together([(Path(path), data)])
    except OSError as error:
        raise WriteError(f"{path}: {error.strerror or error}") from None


def write_files(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write files that belong together (captions and their word times) atomically, all or none;
    a failure is a one-line ``WriteError`` naming the file."""
    try:
        write_together(files)
    except OSError as error:
        names = " and ".join(str(path) for path, _ in files)
        either = "; neither was written" if len(files) > 1 else ""  # all or none
        raise WriteError(f"{names}: cannot be written ({error.strerror or error}){either}") from None
