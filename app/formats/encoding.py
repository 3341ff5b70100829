"""Bytes to text and back: byte-order marks, UTF-8, detected legacy encodings, line endings."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path

import charset_normalizer

from app.formats.errors import FormatError

# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_BOM_OF = {name: bom for bom, name in _BOMS}
_NEAR_TIE = 0.15


@dataclass(frozen=True)
class DecodedText:
    """Text with line breaks turned into ``\\n``, and what is needed to encode it back."""

    text: str
    encoding: str
    bom: bool
    line_ending: str
    mixed_line_endings: bool
    warnings: tuple[str, ...] = ()


def detect_line_ending(text: str) -> tuple[str, bool]:
    """The most common line ending (LF when there is none) and whether others occur too."""
    crlf = text.count("\r\n")
    counts = {"\r\n": crlf, "\n": text.count("\n") - crlf, "\r": text.count("\r") - crlf}
    used = [ending for ending, count in counts.items() if count]
    if not used:
        return "\n", False
    return max(used, key=lambda ending: counts[ending]), len(used) > 1


def decode(data: bytes, path: Path | str | None = None) -> DecodedText:
    """Decode a caption file: a BOM decides, else strict UTF-8, else the detected encoding."""
    bom = next(((mark, name) for mark, name in _BOMS if data.startswith(mark)), None)
    warnings: tuple[str, ...] = ()
    if bom is not None:
        mark, encoding = bom
        try:
            text = data[len(mark) :].decode(encoding)
        except UnicodeDecodeError as error:
            raise FormatError(
                path, None, f"not valid {encoding} despite its byte-order mark ({error.reason})"
            ) from None
    else:
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            by_line = _decode_mixed(data)
            if by_line is not None:
                text, encoding, warnings = by_line[0], "utf-8", (by_line[1],)
            else:
                text, encoding = _decode_detected(data, path)
    if "\x00" in text:
        raise FormatError(path, None, "binary data (NUL characters), not a text caption file")
    line_ending, mixed = detect_line_ending(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return DecodedText(text, encoding, bom is not None, line_ending, mixed, warnings)


def _decode_mixed(data: bytes) -> tuple[str, str] | None:
    """UTF-8 with some lines in cp1252 (a file edited with two tools): each line decoded as what it
    is, and a warning naming the cp1252 lines. None unless the file holds real UTF-8 beyond ASCII
    (otherwise it is a legacy file, for detection) and every other line is cp1252."""
    lines = data.split(b"\n")
    legacy: list[int] = []
    utf8_beyond_ascii = False
    decoded: list[str] = []
    for number, line in enumerate(lines, start=1):
        try:
            decoded.append(line.decode("utf-8"))
            utf8_beyond_ascii = utf8_beyond_ascii or _western_utf8(line)
        except UnicodeDecodeError:
            try:
                decoded.append(line.decode("cp1252"))
            except UnicodeDecodeError:
                return None
            legacy.append(number)
    if not utf8_beyond_ascii:
        return None
    shown = ", ".join(map(str, legacy[:10])) + (f" and {len(legacy) - 10} more" if len(legacy) > 10 else "")
    warning = f"line{'s' if len(legacy) > 1 else ''} {shown} not UTF-8 but cp1252; read as such and written as UTF-8"
    return "\n".join(decoded), warning


#: The lead bytes of Western European text in UTF-8: accented letters (C3), Latin-1 symbols (C2),
#: Œ, Š, Ÿ and the like (C5), and typographic punctuation and the euro sign (E2 80, E2 82).
_WESTERN_UTF8 = re.compile(rb"[\xc2\xc3\xc5][\x80-\xbf]|\xe2[\x80\x82][\x80-\xbf]")


def _western_utf8(line: bytes) -> bool:
    """Whether a line that decodes as UTF-8 holds the UTF-8 of Western European text, as the UTF-8
    lines of a file mixed with cp1252 do. cp1252 text can decode as UTF-8 by chance ("ß’" is the
    bytes DF 92, a valid UTF-8 letter of another script), and is then no proof of UTF-8."""
    return _WESTERN_UTF8.search(line) is not None


def _decode_detected(data: bytes, path: Path | str | None) -> tuple[str, str]:
    # Only encodings that give back the very same bytes are taken, so saving never alters a file.
    matches = [m for m in charset_normalizer.from_bytes(data) if _reversible(data, m.encoding)]
    if not matches:
        raise FormatError(path, None, "not text in any known encoding")
    # Short Western-European files fit several Windows code pages about equally well; cp1252 is
    # by far the commonest legacy encoding of subtitles, so it wins near-ties.
    near_tie = matches[0].chaos + _NEAR_TIE
    best = next((m for m in matches if m.encoding == "cp1252" and m.chaos <= near_tie), matches[0])
    encoding = codecs.lookup(best.encoding).name
    return data.decode(encoding), encoding


def _reversible(data: bytes, encoding: str) -> bool:
    try:
        return data.decode(encoding).encode(encoding) == data
    except (UnicodeError, LookupError):
        return False


def encode(text: str, encoding: str, bom: bool, line_ending: str) -> bytes:
    """Encode ``\\n``-separated text with the given line ending, encoding and byte-order mark."""
    if line_ending != "\n":
        text = text.replace("\n", line_ending)
    prefix = _BOM_OF.get(codecs.lookup(encoding).name, b"") if bom else b""
    return prefix + text.encode(encoding)
