"""Training and evaluation text: the corpora in their own formats, turned into what ASR gives.

Every reader returns ``LabelledText`` documents: lowercase words without punctuation (the model's
input, as ASR output looks), the mark class after each word, and each word's casing class
(-1 where the corpus is lowercased and casing is unknown).
"""

from __future__ import annotations

import html
import json
import random
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.core.marks import SENTENCE_END_CLASSES, model_class
from app.core.model import Casing, casing_of
from app.formats.corpora import read_token_tags
from app.formats.cuetext import split_token

#: Casing classes of the casing head.
UNKNOWN = -100  # ignored by the loss


def casing_class(text: str) -> int:
    casing = casing_of(text)
    if casing is Casing.UPPER and len(text) > 1:
        return 2
    if casing in (Casing.CAPITALISED, Casing.MIXED) or (casing is Casing.UPPER and len(text) == 1):
        return 1
    return 0


@dataclass
class LabelledText:
    words: list[str]
    labels: list[int]
    casing: list[int]
    language: str
    source: str
    name: str = ""
    extras: dict[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.words)


def from_punctuated_text(
    text: str, language: str, source: str, name: str = "", cased: bool = True
) -> LabelledText:
    """Words, marks and casing of running punctuated text."""
    words: list[str] = []
    labels: list[int] = []
    casing: list[int] = []
    for token in text.split():
        _, core, mark = split_token(token)
        if not core:
            # A mark standing alone (" – ", French " ?") belongs to the word before it.
            if words and labels[-1] == 0:
                labels[-1] = model_class(mark)
            continue
        words.append(core.lower())
        labels.append(model_class(mark))
        casing.append(casing_class(core) if cased else UNKNOWN)
    return LabelledText(words, labels, casing, language, source, name)


def read_plain_text(path: Path, language: str, source: str) -> LabelledText:
    return from_punctuated_text(path.read_text(encoding="utf-8"), language, source, path.name)


def read_rev(path: Path, source: str = "earnings22") -> LabelledText:
    """Rev NLP files (``token|speaker|ts|endTs|punctuation|prepunctuation|case|...``), with timings."""
    words: list[str] = []
    labels: list[int] = []
    casing: list[int] = []
    starts: list[float | None] = []
    ends: list[float | None] = []
    with path.open(encoding="utf-8") as file:
        next(file, None)
        for line in file:
            fields = line.rstrip("\n").split("|")
            if len(fields) < 7:
                continue
            token = fields[0]
            _, core, _ = split_token(token)
            if not core:
                if words and labels[-1] == 0:
                    labels[-1] = model_class(fields[4] or token)
                continue
            words.append(core.lower())
            labels.append(model_class(fields[4]))
            casing.append({"LC": 0, "UC": 1, "CA": 2, "MC": 1}.get(fields[6], casing_class(core)))
            starts.append(float(fields[2]) if fields[2] else None)
            ends.append(float(fields[3]) if fields[3] else None)
    return LabelledText(words, labels, casing, "en", source, path.name, {"starts": starts, "ends": ends})


def conllu_sentences(path: Path) -> list[str]:
    return [
        line[len("# text = ") :].strip()
        for line in path.open(encoding="utf-8")
        if line.startswith("# text = ")
    ]


def read_conllu(path: Path, language: str, part: str = "all") -> LabelledText:
    """The ``# text`` lines of a CoNLL-U file in order; ``part`` "dev" / "test" is its first / second half."""
    sentences = conllu_sentences(path)
    half = len(sentences) // 2
    chosen = {"all": sentences, "dev": sentences[:half], "test": sentences[half:]}[part]
    return from_punctuated_text(" ".join(chosen), language, "ud", f"{path.name}:{part}")


def read_mteval_xml(path: Path, language: str, source: str) -> list[LabelledText]:
    """IWSLT/mteval XML: one document per ``<doc>``, its segments joined."""
    root = ElementTree.parse(path).getroot()
    documents = []
    for doc in root.iter("doc"):
        text = " ".join((seg.text or "").strip() for seg in doc.iter("seg"))
        documents.append(from_punctuated_text(text, language, source, f"{path.name}:{doc.get('docid')}"))
    return documents


def read_iwslt_tags(path: Path) -> LabelledText:
    """IWSLT2011 token-tag files: lowercased, so casing is unknown."""
    words = read_token_tags(path)
    return LabelledText(
        [w.text for w in words],
        [model_class(w.mark) for w in words],
        [UNKNOWN] * len(words),
        "en",
        "iwslt2011",
        path.name,
    )


def read_json_lines(
    path: Path, language: str = "en", source: str = "mustc", exclude: Path | None = None
) -> LabelledText:
    """MuST-C style JSON lines (``tgt_text``); segments whose ``id`` is in ``exclude`` are skipped."""
    skipped = set()
    if exclude is not None:
        skipped = {json.loads(line)["id"] for line in exclude.open(encoding="utf-8") if line.strip()}
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    texts = [row["tgt_text"] for row in rows if row.get("id") not in skipped]
    return from_punctuated_text(" ".join(texts), language, source, path.name)


def read_any(path: Path, format: str, language: str = "en") -> list[LabelledText]:
    """Evaluation data by format name (the ``punctum eval --format`` choices)."""
    paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    documents: list[LabelledText] = []
    for item in paths:
        if format == "iwslt":
            documents.append(read_iwslt_tags(item))
        elif format == "rev" and item.suffix == ".nlp":
            documents.append(read_rev(item))
        elif format == "conllu" and item.suffix == ".conllu":
            documents.append(read_conllu(item, language))
        elif format == "xml" and item.suffix == ".xml":
            documents.extend(read_mteval_xml(item, language, item.stem))
        elif format == "text" and item.suffix == ".txt":
            documents.append(read_plain_text(item, language, item.parent.name))
        elif format == "jsonl":
            documents.append(read_json_lines(item, language))
    return documents


# --- the training mixture -------------------------------------------------------------------

#: Earnings-22 calls held out from training (the first and last few in name order).
EARNINGS_DEV_COUNT, EARNINGS_TEST_COUNT = 5, 8


def earnings_split(folder: Path) -> dict[str, list[Path]]:
    calls = sorted(folder.glob("*.nlp"))
    rng = random.Random(22)
    shuffled = calls[:]
    rng.shuffle(shuffled)
    dev = sorted(shuffled[:EARNINGS_DEV_COUNT])
    test = sorted(shuffled[EARNINGS_DEV_COUNT : EARNINGS_DEV_COUNT + EARNINGS_TEST_COUNT])
    train = [c for c in calls if c not in dev and c not in test]
    return {"train": train, "dev": dev, "test": test}


def words_between(document: LabelledText, first: int, stop: int, suffix: str = "") -> LabelledText:
    """Words ``first`` to ``stop`` of a document as a document of its own."""
    return LabelledText(
        document.words[first:stop],
        document.labels[first:stop],
        document.casing[first:stop],
        document.language,
        document.source,
        document.name + suffix,
        # Per-word lists (word timings) are cut with the words.
        {
            key: value[first:stop] if isinstance(value, list) and len(value) == len(document) else value
            for key, value in document.extras.items()
        },
    )


def mid_sentence_casing(document: LabelledText) -> list[int]:
    """The document's casing classes with those of sentence-initial words unknown."""
    return [
        UNKNOWN if index == 0 or document.labels[index - 1] in SENTENCE_END_CLASSES else case
        for index, case in enumerate(document.casing)
    ]


def with_asr_noise(document: LabelledText, rate: float, rng: random.Random) -> LabelledText:
    """A copy of a document with errors of the kind speech recognition makes: about ``rate`` of
    the words replaced by another word of the document (half of them), dropped or preceded by an
    inserted word (a quarter each). ASR captions are never word-perfect, so a model trained only
    on clean transcripts leans on cues an ASR transcript does not keep.

    A dropped word's mark moves to the word before it, as a reference aligned to the ASR words
    would put it; inserted words carry no mark and unknown casing. Word timings no longer fit the
    words and are left out."""
    words: list[str] = []
    labels: list[int] = []
    casing: list[int] = []
    for word, label, case in zip(document.words, document.labels, document.casing, strict=True):
        roll = rng.random()
        if roll < rate / 2:
            word = rng.choice(document.words)
        elif roll < rate * 3 / 4:
            if label and labels and not labels[-1]:
                labels[-1] = label
            continue
        elif roll < rate:
            words.append(rng.choice(document.words))
            labels.append(0)
            casing.append(UNKNOWN)
        words.append(word)
        labels.append(label)
        casing.append(case)
    return LabelledText(words, labels, casing, document.language, document.source, document.name + ":noisy")


def split_words(document: LabelledText, fraction: float) -> tuple[LabelledText, LabelledText]:
    """The first ``fraction`` of a document and the rest, as two documents."""
    cut = int(len(document) * fraction)
    return words_between(document, 0, cut, ":a"), words_between(document, cut, len(document), ":b")


#: A talks file without blank lines (one segment per line, no talk boundaries) is cut into
#: pseudo-talks of this many lines, so that a dev slice can still be whole stretches of text.
LINES_PER_PSEUDO_TALK = 100
_MOSES_ELISION = re.compile(r"(\w)' (\w)")


def detokenize(line: str) -> str:
    """Moses-tokenized text (``qu&apos; en est-il ?``) as written text (``qu'en est-il ?``): the
    entities unescaped and elided words joined again, as ASR would write them. Marks standing
    alone stay so; the reader gives them to the word before."""
    return _MOSES_ELISION.sub(r"\1'\2", html.unescape(line))


def read_talks(path: Path, language: str, source: str, cased: bool = True) -> list[LabelledText]:
    """One document per talk of a file with one paragraph per line and a blank line between
    talks (so that no training window crosses from one talk into another). A lowercased file
    (``cased=False``) teaches marks only: its casing is unknown."""
    talks: list[list[str]] = [[]]
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            talks[-1].append(detokenize(line.strip()))
        elif talks[-1]:
            talks.append([])
    talks = [talk for talk in talks if talk]
    if len(talks) == 1:
        lines = talks[0]
        talks = [lines[i : i + LINES_PER_PSEUDO_TALK] for i in range(0, len(lines), LINES_PER_PSEUDO_TALK)]
    return [
        from_punctuated_text(" ".join(talk), language, source, f"{path.name}:{index}", cased)
        for index, talk in enumerate(talks)
    ]


#: One talk in this many is held out as dev (a "talks" source's ``dev_every``).
TALKS_DEV_EVERY = 25


def held_out_talks(
    talks: list[LabelledText], dev_every: int = TALKS_DEV_EVERY
) -> dict[str, list[LabelledText]]:
    """Every ``dev_every``-th talk (from the middle of each run of that many) held out as dev,
    whole; the rest for training. Spread over the file, so dev is not one stretch of it."""
    dev = [talk for index, talk in enumerate(talks) if index % dev_every == dev_every // 2]
    train = [talk for index, talk in enumerate(talks) if index % dev_every != dev_every // 2]
    return {"train": train, "dev": dev}


def iter_text_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*.txt") if p.is_file())
