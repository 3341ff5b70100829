"""A house style as a small JSON file, which a team carries from one project to the next
(``--style FILE``, ``punctum style --write``), and as a project keeps the style it was given."""

from __future__ import annotations

import json
import math
from pathlib import Path

from app.core.marks import MODEL_MARKS
from app.core.small_files import SmallFileError, small_file_text
from app.ml.house_style import CALIBRATION_INPUTS, CLASSES, HouseStyle, StyleError

#: The most decisions a style file may say it rests on (a team's year of review is far fewer).
MAX_DECISIONS = 1_000_000_000
#: A style file's format and version, written in it.
FORMAT = "punctum-style"
VERSION = 1


def style_json(style: HouseStyle) -> dict[str, object]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "decisions": style.decisions + style.inherited,
        "marks": {"bias": round(style.mark_bias, 4), "scale": round(style.mark_scale, 4)},
        "word_bias": _words_json(style.word_bias),
        "added": {
            "bias": round(style.add_bias, 4),
            "scale": round(style.add_scale, 4),
            "word_bias": _words_json(style.add_word_bias),
        },
        "class_bias": {MODEL_MARKS[k]: round(style.class_bias[k], 4) for k in range(1, CLASSES)},
        "calibration": {
            name: round(w, 4) for name, w in zip(CALIBRATION_INPUTS, style.calibration, strict=True)
        },
        "calibration_spread": [round(v, 6) for v in style.calibration_spread],
    }


def style_of_json(data: object) -> HouseStyle:
    """The style ``style_json`` wrote; ``StyleError`` in one line for anything else."""
    classes = {mark: k for k, mark in enumerate(MODEL_MARKS) if k}
    try:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StyleError("not a Punctum style file")
        version = data.get("version")
        if type(version) is not int or version != VERSION:  # true is not 1
            raise StyleError(f"a style file of version {data.get('version')!r}; this Punctum reads {VERSION}")
        kept = _presence_of(dict(data["marks"]), data.get("word_bias", []))
        # Where the model proposes no mark; files written before it was fitted apart have none.
        added = dict(data.get("added", {"bias": 0.0, "scale": 1.0}))
        add = _presence_of(added, added.get("word_bias", []))
        bias = [0.0] * CLASSES
        for mark, value in dict(data["class_bias"]).items():
            bias[classes[mark]] = _finite(value)
        given = dict(data.get("calibration", {}))
        unknown = set(given) - set(CALIBRATION_INPUTS)
        if unknown:
            raise StyleError(f"unknown calibration inputs {sorted(unknown)}")
        calibration = tuple(_finite(given.get(name, 0.0)) for name in CALIBRATION_INPUTS)
        spread = tuple(_finite(v) for v in data.get("calibration_spread", []))
        if spread and len(spread) != len(CALIBRATION_INPUTS) ** 2:
            raise StyleError("a calibration spread of the wrong size")
        decisions = data.get("decisions", 0)
        if type(decisions) is not int or not 0 <= decisions <= MAX_DECISIONS:
            raise StyleError(f"a count of decisions is a whole number from 0 to {MAX_DECISIONS:,}")
    except StyleError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise StyleError(f"a malformed style file ({error})") from None
    return HouseStyle(*kept, tuple(bias), calibration, spread, 0, decisions, *add)


def _words_json(words: dict[str, float]) -> list[dict[str, object]]:
    return [{"before": word, "bias": round(bias, 4)} for word, bias in sorted(words.items())]


def _presence_of(block: dict[str, object], words: object) -> tuple[float, float, dict[str, float]]:
    """Whether a mark goes, as a style file writes it: ``block``'s bias and scale, and the words'
    biases (``_words_json``)."""
    scale = _finite(block["scale"])
    if not 0.0 < scale <= 5.0:
        raise StyleError(f"a mark scale of {scale}")
    by_word = {str(item["before"]): _finite(item["bias"]) for item in words}  # type: ignore[attr-defined]
    return _finite(block["bias"]), scale, by_word


def _finite(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or abs(number) > 20:
        raise ValueError(f"{value!r} is not a bias")
    return number


#: The largest style file read: a style of a few thousand words is tens of kilobytes.
STYLE_FILE_BYTES = 5_000_000


def read_style(path: Path) -> HouseStyle:
    """A style file; ``StyleError`` with one line for anything else."""
    try:
        text = small_file_text(Path(path), STYLE_FILE_BYTES)
    except SmallFileError as reason:
        raise StyleError(f"{path}: cannot read the style file ({reason})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise StyleError(f"{path}: not a Punctum style file (not JSON)") from None
    try:
        return style_of_json(data)
    except StyleError as error:
        raise StyleError(f"{path}: {error}") from None


def style_text(style: HouseStyle) -> str:
    return json.dumps(style_json(style), indent=2, ensure_ascii=False) + "\n"
