"""Language codes as a user gives them (``--language``): two-letter ISO 639-1 codes, with an
optional region ("pt-BR", "fr_CA") that is dropped, since models and the number reader of the
alignment know languages, not regions."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import numpy as np

#: The ISO 639-1 codes (the deprecated bh and sh included: older files still carry them).
_ISO_639_1_CODES = """
    aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da
    de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz
    ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln
    lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi
    pl ps pt qu rm rn ro ru rw sa sc sd se sg sh si sk sl sm sn so sq sr ss st su sv sw ta te tg th
    ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
"""
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())
#: The languages the shipped model was trained on (its model card).
TRAINED = ("de", "en", "es", "fr", "it", "nl", "pt", "ro")
_CODE = re.compile(r"^([A-Za-z]{2})(?:[-_](?:[A-Za-z]{2}|[0-9]{3}))?$")


class LanguageError(ValueError):
    """A language that is no ISO 639-1 code."""


def language_code(text: str) -> str:
    """The ISO 639-1 code ``text`` names ("EN" -> "en", "pt-BR" -> "pt"); ``LanguageError`` with a
    line that says what is accepted otherwise."""
    match = _CODE.match(text.strip())
    if match and match.group(1).lower() in ISO_639_1:
        return match.group(1).lower()
    raise LanguageError(
        f"{text!r} is not a language code: give a two-letter ISO 639-1 code, optionally with a "
        f"region (pt-BR); the shipped model was trained on {', '.join(TRAINED)}"
    )


#: Language names for the warning about a language a model was not trained on.
_NAMES = {
    "ar": "Arabic",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "zh": "Chinese",
}


def language_name(code: str) -> str:
    return f"{_NAMES[code]} ({code})" if code in _NAMES else code


def detect_language(text: str, default: str = "en") -> str:
    """The ISO 639-1 code of the language ``text`` is most likely in (py3langid), ``default`` for
    text without letters."""
    if not any(c.isalpha() for c in text):
        return default
    language, _ = _identifier().classify(text)
    return str(language)


#: A language given for a text is contradicted only by a text of this many words or more
#: (fewer say little: "hello there" reads as Sesotho) ...
MISMATCH_MIN_WORDS = 8
#: ... where another language is likelier by this much per word (natural log of the likelihood
#: ratio): close languages (Portuguese and Galician) stay well under it, another language
#: entirely (English given as French) well over it (7 to 9 per word on the sample).
MISMATCH_PER_WORD = 5.0


def contradicting_language(text: str, given: str) -> str | None:
    """The language ``text`` is plainly in when it is not ``given`` (the code), else None."""
    words = len(text.split())
    if words < MISMATCH_MIN_WORDS:
        return None
    scores = dict(_identifier().rank(text))
    likeliest = max(scores, key=scores.__getitem__)
    if likeliest == given or given not in scores:
        return None
    return str(likeliest) if scores[likeliest] - scores[given] >= MISMATCH_PER_WORD * words else None


@functools.cache
def _identifier() -> Any:
    """py3langid's identifier, loaded from an uncompressed copy in Punctum's cache: the package's
    LZMA file takes about 0.35 s to decompress at every start, the copy 0.1 s to read."""
    from py3langid import langid, modelio

    with np.load(prepare(), allow_pickle=False) as data:
        return langid.LanguageIdentifier(
            np.asarray(data["ptc"]),
            np.asarray(data["pc"]),
            data["classes"].tolist(),
            modelio._to_array(data["nextmove"]),
            data["out_feat"].tolist(),
            tk_row=modelio._to_array(data["nextmove_row"]),
        )


def identifier_copy_name() -> str:
    import importlib.metadata

    return f"py3langid-{importlib.metadata.version('py3langid')}.npz"


def prepare(target: Path | None = None) -> Path:
    """The uncompressed model file: the desktop bundle's, else written once (atomically) beside
    Punctum's other caches, or at ``target``. Set-up calls this, and the bundle's build with a
    ``target`` inside it, so that no user run waits for it."""
    import lzma
    import os
    import shutil
    import uuid

    from py3langid import langid

    from app.core.bundled import packaged_language_identifier
    from app.ml.base_encoder import cache_root

    if target is None:
        packaged = packaged_language_identifier(identifier_copy_name())
        if packaged is not None:
            return packaged
        target = cache_root() / "langid" / identifier_copy_name()
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            with lzma.open(langid.MODEL_DIR / langid.MODEL_FILE) as source, staging.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            staging.replace(target)
        finally:
            staging.unlink(missing_ok=True)
    return target


if __name__ == "__main__":
    prepare()
