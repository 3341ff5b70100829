"""Small JSON files Punctum ships or is given (settings, calibrations): read whole, one line on failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.core.errors import PunctumError
from app.core.small_files import small_file_text


def read_json_object(path: Path, error: type[PunctumError], what: str) -> dict[str, Any]:
    """The JSON object in ``path``; otherwise ``error`` naming the file and ``what`` it should hold."""
    try:
        data = json.loads(small_file_text(path, 50_000_000))
    except (ValueError, RecursionError) as reason:  # a SmallFileError is a ValueError
        raise error(f"{path}: cannot read {what} ({reason})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: {what} is a JSON {json_type(data)}, not an object")
    return data


def json_type(value: object) -> str:
    """What JSON calls the type of ``value``, for a message."""
    names = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
