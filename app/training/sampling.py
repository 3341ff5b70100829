"""What a training run learns from and is judged on: each configured source's documents, taken up
to its word budget and encoded once; random windows over them, drawn by source weight; and the dev
documents, drawn the same way whenever they are asked for again (calibration reads the ones
training evaluated on)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.ml.windows import Encoded, encode_words, window_end
from app.training import data as corpora
from app.training import gaps
from app.training.config import TrainConfig


def load_source(
    spec: dict[str, Any], root: Path, part: str, speech_cache: Path | None = None
) -> list[corpora.LabelledText]:
    """Documents of one configured source for ``part`` ("train" or "dev"). Speech sources are
    synthesised into ``speech_cache`` the first time."""
    kind, language = spec["kind"], spec.get("language", "en")
    path = root / spec["path"]
    # Some kinds of source give training text alone, one gives dev text alone.
    if (kind in ("speech", "text", "jsonl") and part != "train") or (kind == "conllu" and part != "dev"):
        return []
    if kind == "speech":
        if speech_cache is None:
            raise ValueError("speech sources need a cache folder")
        from app.training.speech_corpus import build_speech_corpus, read_speech_corpus

        texts = load_source({**spec, "kind": spec["from_kind"]}, root, "train")
        folder = speech_cache / spec["name"]
        build_speech_corpus(texts, spec["voice"], folder, int(spec["words"]), int(spec.get("seed", 1)))
        return read_speech_corpus(folder, language, spec["name"])
    if kind == "earnings22":
        return [corpora.read_rev(p) for p in corpora.earnings_split(path)[part]]
    if kind == "iwslt_tags":
        document = corpora.read_iwslt_tags(path)
        train, dev = corpora.split_words(document, 0.9)
        return [train] if part == "train" else [dev]
    if kind == "talks":
        talks = corpora.read_talks(path, language, spec["name"], cased=bool(spec.get("cased", True)))
        return corpora.held_out_talks(talks, int(spec.get("dev_every", corpora.TALKS_DEV_EVERY)))[part]
    if kind == "text":
        return [corpora.read_plain_text(p, language, spec["name"]) for p in corpora.iter_text_files(path)]
    if kind == "jsonl":
        exclude = root / spec["exclude"] if spec.get("exclude") else None
        return [corpora.read_json_lines(path, language, spec["name"], exclude)]
    if kind == "conllu":
        return [corpora.read_conllu(path, language, "dev")]
    raise ValueError(f"unknown source kind {kind!r}")


def _word_cap(spec: dict[str, Any], config: TrainConfig) -> int:
    """A source's own ``max_words``, else the run's ``max_words_per_source``."""
    return int(spec.get("max_words", config.max_words_per_source))


def _cap(documents: list[corpora.LabelledText], words: int, rng: random.Random) -> list[corpora.LabelledText]:
    """At most ``words`` words, taken as whole documents in random order (long ones cut)."""
    order = documents[:]
    rng.shuffle(order)
    kept, total = [], 0
    for document in order:
        if total >= words:
            break
        if total + len(document) > words:
            document, _ = corpora.split_words(document, (words - total) / len(document))
        kept.append(document)
        total += len(document)
    return kept


@dataclass
class EncodedDocument:
    text: corpora.LabelledText
    encoded: Encoded
    gaps: list[list[float] | None] | None = None
    # The casing the casing head learns (the text's own, or with sentence starts left out).
    casing: list[int] = field(default_factory=list)


class Sampler:
    """Random windows: a source by weight, a document by length, a random first word."""

    def __init__(self, sources: list[tuple[float, list[EncodedDocument]]], budget: int, seed: int) -> None:
        self.sources = [(w, docs) for w, docs in sources if docs]
        self.budget = budget
        self.rng = random.Random(seed)

    def sample(self) -> tuple[EncodedDocument, int, int]:
        weights = [w for w, _ in self.sources]
        _, documents = self.rng.choices(self.sources, weights)[0]
        document = self.rng.choices(documents, [len(d.text) for d in documents])[0]
        first = self.rng.randrange(max(1, len(document.text) - 8))
        return document, first, window_end(document.encoded, first, self.budget)


def run_data(
    config: TrainConfig, tokenizer: Any, gap_inputs: Any, log: Callable[[str], None]
) -> tuple[list[tuple[float, list[EncodedDocument]]], list[corpora.LabelledText], dict[str, Any]]:
    """Each source's training documents (encoded, with its weight), the dev documents of all of
    them, and an inventory of the words taken from each."""
    rng, dev_rng = _sampling_rngs(config)
    train_sources: list[tuple[float, list[EncodedDocument]]] = []
    dev_documents: list[corpora.LabelledText] = []
    inventory: dict[str, Any] = {}
    for spec in config.sources:
        documents = _cap(
            load_source(spec, config.data_root, "train", config.output.parent / "speech"),
            _word_cap(spec, config),
            rng,
        )
        dev = _cap(load_source(spec, config.data_root, "dev"), config.dev_words_per_source, dev_rng)
        if spec.get("asr_noise"):
            # A noisy copy beside each clean document; its own generator leaves the sampling of
            # the other sources and of dev exactly as in runs without noise.
            noise_rng = random.Random(f"{config.seed}:{spec['name']}")
            documents = documents + [
                corpora.with_asr_noise(d, float(spec["asr_noise"]), noise_rng) for d in documents
            ]
        encoded = [
            EncodedDocument(
                d,
                encode_words(tokenizer, d.words),
                gaps.restrict(gaps.document_gaps(d.extras, d.words), gap_inputs)
                if config.gap_branch
                else None,
                corpora.mid_sentence_casing(d) if config.casing_mid_sentence_only else d.casing,
            )
            for d in documents
            if len(d) > 16
        ]
        train_sources.append((float(spec.get("weight", 1.0)), encoded))
        dev_documents.extend(dev)
        train_words, dev_words = sum(len(d) for d in documents), sum(len(d) for d in dev)
        inventory[spec["name"]] = {
            "language": spec.get("language", "en"),
            "train_words": train_words,
            "dev_words": dev_words,
            "weight": spec.get("weight", 1.0),
            "path": spec["path"],
        }
        log(f"data {spec['name']}: {train_words} train words, {dev_words} dev")
    return train_sources, dev_documents, inventory


def dev_documents(config: TrainConfig) -> list[corpora.LabelledText]:
    """The same dev documents training evaluated on."""
    rng, dev_rng = _sampling_rngs(config)
    documents: list[corpora.LabelledText] = []
    for spec in config.sources:
        if dev_rng is rng:  # the training sample's draws come first in the shared stream
            _cap(load_source(spec, config.data_root, "train"), _word_cap(spec, config), rng)
        documents.extend(
            _cap(load_source(spec, config.data_root, "dev"), config.dev_words_per_source, dev_rng)
        )
    return documents


def _sampling_rngs(config: TrainConfig) -> tuple[random.Random, random.Random]:
    """Random sources for the training and the dev sample: one shared stream unless ``dev_seed`` is set."""
    rng = random.Random(config.seed)
    return rng, (rng if config.dev_seed is None else random.Random(config.dev_seed))
