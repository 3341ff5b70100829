"""Language codes as a user gives them (``--language``): two-letter ISO 639-1 codes, with an
optional region ("pt-BR", "fr_CA") that is dropped, since models and the number reader of the
alignment know languages, not regions."""

from __future__ import annotations

import re

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
