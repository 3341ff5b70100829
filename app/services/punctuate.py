"""The punctuation model as a use case: suggestions for a document, applied as the user asks.

A model runs as its ONNX export on ONNX Runtime (made once per model, at set-up for the shipped
one), so neither torch nor Transformers loads unless asked for (``engine="torch"``).
"""

from __future__ import annotations

import functools
import json
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core import commands
from app.core.commands import ApplyPolicy as ApplyPolicy  # re-exported for the command line
from app.core.errors import PunctumError
from app.core.evidence import GapMeasure
from app.core.history import History, Step, WordEdit
from app.core.marks import MODEL_MARKS, SENTENCE_END_CLASSES, has_protected_punctuation, model_class
from app.core.model import Casing, Document, Source, Suggestion, Word, apply_casing
from app.core.orthography import always_capitalised
from app.core.triage import OPERATING_THRESHOLD
from app.ml.runtime import INT8_BY_DEFAULT as INT8_BY_DEFAULT  # re-exported for the command line
from app.ml.runtime import SHIPPED_MODEL
from app.ml.validation import ModelError
from app.services import languages

if TYPE_CHECKING:
    from app.ml.inference import LoadedModel
    from app.services.analysis import AnalysisReport, AnalysisRequest

DEFAULT_MODEL = SHIPPED_MODEL
#: Languages whose typography puts a (non-breaking) space before these marks.
_SPACED_MARKS = {"fr": set("?!:;")}
_CJK_MARKS = {".": "。", "?": "？", "!": "！", ":": "："}
#: Languages with marks of their own: Chinese writes its comma "，", Japanese "、".
_FULL_WIDTH_MARKS = {"zh": {**_CJK_MARKS, ",": "，"}, "ja": {**_CJK_MARKS, ",": "、"}}
#: A lowercase word inside a sentence gets a capital suggested above this casing-head probability.
CAPITAL_PROBABILITY = 0.5
#: Scripts the model's training data covers; other text still gets a result, with a warning.
_KNOWN_SCRIPTS = ("LATIN",)
#: ``--apply triage``'s model threshold unless another is given (its measured operating point).
TRIAGE_THRESHOLD = OPERATING_THRESHOLD
#: How a model runs: its ONNX export on ONNX Runtime, or the torch model itself.
ENGINES = ("onnx", "torch")


class ModelNotFoundError(PunctumError):
    pass


def render_mark(mark: str, language: str) -> str:
    """A mark as the language writes it: French puts a no-break space before ? ! : ;, Chinese and
    Japanese write their own full-width marks (``。`` ``，`` or ``、``)."""
    if mark in _FULL_WIDTH_MARKS.get(language, {}):
        return _FULL_WIDTH_MARKS[language][mark]
    if mark and mark in _SPACED_MARKS.get(language, ()):
        return "\u00a0" + mark
    return mark


def model_word(word: Word) -> str:
    """What the model reads: the word lowercased, as ASR gives it, with accents composed (NFC) as in
    the training text."""
    return unicodedata.normalize("NFC", word.text.lower())


def detect_language(words: list[Word], default: str = "en") -> str:
    """The language of a document's first 400 words."""
    return languages.detect_language(" ".join(w.text for w in words[:400]), default)


def unknown_script_share(words: list[Word]) -> float:
    letters = [c for w in words for c in w.text if c.isalpha()]
    if not letters:
        return 0.0
    foreign = sum(1 for c in letters if not unicodedata.name(c, "").startswith(_KNOWN_SCRIPTS))
    return foreign / len(letters)


def _to_stderr(message: str) -> None:
    print(f"punctum: {message}", file=sys.stderr)


@dataclass
class Punctuator:
    """A loaded punctuation model. ``location``: a model folder (default: the shipped one).

    ``engine`` "onnx" runs the model's export, made on first use when the cache lacks it (with a
    message to ``log``); "torch" runs the torch model, adapters merged at load."""

    location: Path | str | None = None
    quantize: bool | None = None  # int8 (True) or float (False); None: the engine's default
    threads: int | None = None  # CPU threads for the model; the library's default when None
    engine: str = "onnx"
    log: Callable[[str], None] = _to_stderr
    _loaded: LoadedModel | None = field(default=None, init=False, repr=False)
    _directory: Path | None = field(default=None, init=False, repr=False)

    @property
    def int8(self) -> bool:
        """Whether the model runs in int8: by default on ONNX Runtime (``INT8_BY_DEFAULT``), never
        by default on torch, whose int8 is a different and less exact rounding."""
        if self.quantize is None:
            return INT8_BY_DEFAULT and self.engine == "onnx"
        return self.quantize

    def check(self) -> Path:
        """The model's folder, found and checked (settings, encoder, weights) without loading it:
        a malformed model is refused before any work."""
        if self._directory is None:
            if self.engine not in ENGINES:
                raise PunctumError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
            self._directory = resolve_model(self.location, exported_ok=self.engine == "onnx")
        return self._directory

    def load(self) -> LoadedModel:
        if self._loaded is None:
            directory = self.check()
            if self.engine == "torch":
                from app.ml.packaging import load_torch_model, use_threads

                if self.threads:
                    use_threads(self.threads)
                self._loaded = load_torch_model(directory, quantize=self.int8)
            else:
                self._loaded = self._load_export(directory)
        return self._loaded

    def _load_export(self, directory: Path) -> LoadedModel:
        from app.ml.runtime import OnnxModel, export_dir, forget_export

        # ``directory`` was checked by ``check``: only the export may be missing.
        _export_if_missing(directory, self.int8, self.log)
        try:
            return OnnxModel(directory, int8=self.int8, threads=self.threads)
        except Exception as error:  # ONNX Runtime has no error type of its own for a damaged file
            if export_dir(directory).parent == directory:
                raise ModelError(
                    f"{directory}: the model's packaged copy is damaged ({str(error)[:80]}); install Punctum again"
                ) from None
            self.log(f"the model's prepared copy is damaged ({str(error)[:80]}); preparing it again")
            forget_export(directory)
            _export_if_missing(directory, self.int8, self.log)
            return OnnxModel(directory, int8=self.int8, threads=self.threads)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the model was trained on, as its settings list them (none: unknown)."""
        return tuple(str(code) for code in self.load().settings.get("languages", ()))

    @property
    def hears(self) -> bool:
        """Whether the model has a gap branch that uses timings and audio."""
        return bool(int(self.load().settings.get("gap_features", 0)))

    def probabilities(
        self,
        words: list[str],
        language: str | None = None,
        evidence: GapEvidence | None = None,
    ) -> tuple[list[list[float]], list[list[float]]]:
        """Mark and casing probabilities per word; ``evidence`` (from ``gap_evidence``) for models
        that listen."""
        from app.core.evidence import restrict
        from app.ml.inference import inference_options, predict_probabilities
        from app.ml.windows import AudioEvidence

        model = self.load()
        config = model.settings
        gaps = evidence.vectors if evidence is not None else None
        audio = None
        # Only an acoustic branch reads the frames, so only then are they computed.
        if evidence is not None and model.acoustic_features and evidence.ends is not None:
            from app.audio.frames import FRAME_SECONDS

            audio = AudioEvidence(evidence.frames, evidence.ends, FRAME_SECONDS)
        marks, casing = predict_probabilities(
            model,
            words,
            gaps=restrict(gaps, config.get("gap_inputs")),
            audio=audio,
            **inference_options(config, language),
        )
        return marks.tolist(), casing.tolist()


def prepare_model(
    location: Path | str | None, int8: bool | None = None, log: Callable[[str], None] = _to_stderr
) -> Path:
    """The model's folder, its ONNX export made first if the cache lacks it (once per model)."""
    directory = resolve_model(location, exported_ok=True)
    _export_if_missing(directory, INT8_BY_DEFAULT if int8 is None else int8, log)
    return directory


def _export_if_missing(directory: Path, int8: bool, log: Callable[[str], None]) -> None:
    """Make the ONNX export of an already checked model folder unless the cache has it."""
    from app.ml.runtime import is_exported

    if not is_exported(directory, int8):
        try:
            from app.ml.export import export_model
        except ImportError as error:  # an installation without the training packages (torch)
            raise ModelError(
                f"{directory}: this model has no prepared {'int8 ' if int8 else ''}copy, and preparing one needs"
                f" torch ({error.name} is not installed): pip install 'punctum[train]'"
            ) from None
        export_model(directory, int8=int8, log=log)


def resolve_model(location: Path | str | None, exported_ok: bool = False) -> Path:
    """A local model folder, or a Hugging Face repository id fetched on request; checked
    (``app.ml.validation``: settings, encoder and weights) before anything runs it. With
    ``exported_ok``, weights and vocabulary list with an export in the cache are not read again:
    the export was made from them after they were checked, and its name is their hash."""
    from app.ml.runtime import is_exported
    from app.ml.validation import check_encoder, check_settings, check_vocabulary, check_weights

    directory = _find_model(location)
    settings = check_settings(directory)
    encoder = check_encoder(directory, settings)
    if not (exported_ok and is_exported(directory)):  # every export has its float graph
        check_weights(directory, settings, encoder)
        check_vocabulary(directory, encoder)
    return directory


def _find_model(location: Path | str | None) -> Path:
    if location is None:
        if not DEFAULT_MODEL.is_dir():
            raise ModelNotFoundError(f"the default model is missing from {DEFAULT_MODEL}")
        return DEFAULT_MODEL
    path = Path(location).expanduser()
    if path.exists():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(location), allow_patterns=["*.json", "*.safetensors", "*.txt"]))
    except Exception as error:  # hub errors come in many types; the user needs one line
        raise ModelNotFoundError(
            f"model {location!r}: not a folder here, and the hub gave: {error}"
        ) from None


#: Below this share of the captions' time with speech found, a media's audio is taken to be
#: noise, music or silence: nothing is read from it. Silero finds speech in 92% of the LJSpeech
#: clips' time and in none of white noise, a tone, chords or silence.
MIN_SPEECH_SHARE = 0.2


@dataclass
class GapEvidence:
    """What timings and audio say about each word gap: model inputs and their provenance."""

    vectors: list[list[float] | None]
    kinds: list[str]  # per gap: "text", "timing" or "audio"
    media: str | None = None
    track: Any = None  # the media's analysed audio (``AudioTrack``) when the model hears it
    ends: list[float | None] | None = None  # each word's end time in seconds, with ``track``
    measures: list[GapMeasure] | None = None  # the same evidence in a person's units, per word
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def frames(self) -> Any:
        """The media's frame features (``app.audio.frames``) for the acoustic branch, computed on
        first use: models without that branch never read them."""
        from app.audio.frames import frame_features

        return frame_features(self.track) if self.track is not None else None


def gap_evidence(
    document: Document, media: Path | None = None, track: Any = None, listen: bool = False
) -> GapEvidence:
    """Pauses from the captions' own timings; with ``media``, pauses and pitch measured in its audio
    for people to see (``measures``), and, when ``listen``, for the model to read too: word times
    estimated from speech and the audio itself.

    The model does not listen by default: on real speech (the LJSpeech clips) the acoustic branch
    and the estimated word times each lowered F1 (model card, "Audio"). Audio with speech in under
    ``MIN_SPEECH_SHARE`` of the captions' time is not listened to, with a warning.
    ``track``: the media's ``AudioTrack`` when the caller has analysed it already (the editor does,
    for its waveform), so the audio is decoded once.
    """
    from app.audio.analysis import analyse_media
    from app.audio.evidence import caption_gaps
    from app.audio.timing import TimingSource

    if track is None and media is not None:
        track = analyse_media(media)
    warnings: list[str] = []
    heard = track
    if track is not None:
        share = track.speech_share([(c.start / 1000, c.end / 1000) for c in document.cues])
        if share < MIN_SPEECH_SHARE:
            heard = None
            if listen:
                warnings.append(
                    f"speech found in only {share:.0%} of the captions' time (noise, music or "
                    "silence?): the audio was not listened to"
                )
    measured_vectors, measured, measured_timings = caption_gaps(document, heard)
    if listen or heard is None:  # the model reads what was measured
        vectors, gaps, timings = measured_vectors, measured, measured_timings
    else:  # the audio was measured for people only: the model reads the captions' timings
        heard = None
        vectors, gaps, timings = caption_gaps(document, None)
    kinds = [
        "text"
        if v is None
        else "audio"
        if heard is not None and (g.heard or g.timing is TimingSource.ESTIMATED)
        else "timing"
        for v, g in zip(vectors, gaps, strict=True)
    ]
    spectrum = heard if heard is not None and heard.mel is not None else None
    return GapEvidence(
        vectors,
        kinds,
        str(media) if media is not None else None,
        spectrum,
        [t.end for t in timings] if spectrum is not None else None,
        [
            GapMeasure(
                None if g.pause is None else round(g.pause * 1000),
                None if g.pitch_slope is None else round(g.pitch_slope, 1),
                None if t.end is None else round(t.end * 1000),
            )
            for g, t in zip(measured, measured_timings, strict=True)
        ],
        warnings,
    )


def suggest(
    document: Document,
    punctuator: Punctuator,
    language: str | None = None,
    evidence: GapEvidence | None = None,
) -> tuple[list[Suggestion], AnalysisReport]:
    """One suggestion per gap where the model disagrees with the current mark, and casing ones;
    and what was found (language, evidence, warnings).

    ``evidence`` (from ``gap_evidence``) feeds models that listen; others read the text alone.
    """
    from app.services.analysis import AnalysisReport

    words = list(document.words())
    info = AnalysisReport(words=len(words))
    if not words:
        info.warnings.append("the document has no words")
        return [], info
    detected = language is None
    language = language or detect_language(words)
    info.language = language
    known = punctuator.languages
    if detected and known and language not in known:
        info.warnings.append(
            f"the text looks like {languages.language_name(language)}, which this model does not support "
            f"(it knows {', '.join(known)}); expect few marks"
        )
    elif unknown_script_share(words) > 0.5:
        info.warnings.append("most of the text is in a script the model was not trained on; expect few marks")
    heard = evidence is not None and punctuator.hears
    if evidence is not None:
        info.warnings += evidence.warnings
    if evidence is not None and evidence.media and not heard:
        info.warnings.append("this model reads text only; the media was not used")
    kinds = evidence.kinds if heard and evidence is not None else ["text"] * len(words)
    # What the document as a whole was read with: the richest evidence any gap had (a text file
    # handed over as evidence carries no times, so it is read as text).
    info.evidence = next((kind for kind in ("audio", "timing") if kind in kinds), "text")
    mark_probs, casing_probs = punctuator.probabilities(
        [model_word(w) for w in words], language, evidence if heard else None
    )
    suggestions: list[Suggestion] = []
    next_id = document.next_suggestion_id()
    for index, (word, probs) in enumerate(zip(words, mark_probs, strict=True)):
        best = max(range(len(probs)), key=probs.__getitem__)
        if best == model_class(word.mark) or not _open_gap(words, index):
            continue
        distribution = {render_mark(MODEL_MARKS[k], language): round(p, 4) for k, p in enumerate(probs)}
        mark = render_mark(MODEL_MARKS[best], language)
        suggestions.append(
            Suggestion(
                next_id,
                index,
                mark,
                round(probs[best], 4),
                Source.MODEL,
                distribution,
                evidence=kinds[index],
            )
        )
        next_id += 1
    for index, (word, probs) in enumerate(zip(words, casing_probs, strict=True)):
        capital = probs[1] + probs[2]
        casing = head_casing(probs)
        if (
            word.casing is Casing.LOWER
            and word.casable
            and casing is not None
            # Export gives these their capital anyway; a suggestion would only ask for a keystroke.
            and not capitalised_on_export(words, index, language)
        ):
            if index + 1 < len(words) and words[index + 1].glued:
                continue  # the model read a piece of a word split by tags, not the word
            suggestions.append(
                Suggestion(
                    next_id,
                    index,
                    "",
                    round(capital, 4),
                    Source.MODEL,
                    {"capital": round(capital, 4)},
                    casing=casing,
                )
            )
            next_id += 1
    return suggestions, info


def head_casing(probabilities: Sequence[float]) -> Casing | None:
    """The capital the casing head asks for (lower, capitalised, upper probabilities), or None
    when it is not sure enough of any."""
    if probabilities[1] + probabilities[2] <= CAPITAL_PROBABILITY:
        return None
    return Casing.UPPER if probabilities[2] > probabilities[1] else Casing.CAPITALISED


def _starts_sentence(words: list[Word], index: int) -> bool:
    return index == 0 or model_class(words[index - 1].mark) in SENTENCE_END_CLASSES


def capitalised_on_export(words: list[Word], index: int, language: str | None) -> bool:
    """Whether export gives word ``index`` its capital whatever is decided (``sentence_casing``):
    it starts the text or follows a sentence mark the captions have, or the language always
    spells it with one."""
    return _starts_sentence(words, index) or always_capitalised(words[index].text, language)


def drop_capitals_export_gives(document: Document, language: str | None) -> None:
    """Take out the reference's capitals that export gives anyway (the first word, English days):
    a row in the review for them would only ask for a keystroke."""
    words = list(document.words())
    document.suggestions[:] = [
        s
        for s in document.suggestions
        if not (
            s.source is Source.REFERENCE
            and s.casing is Casing.CAPITALISED
            and words[s.gap].casing is Casing.LOWER
            and capitalised_on_export(words, s.gap, language)
        )
    ]


def _open_gap(words: list[Word], index: int) -> bool:
    """Whether the model may propose a mark after word ``index``: not inside a word split by tags,
    and not where the captions have an ellipsis or a dash (their writer's choice)."""
    if index + 1 < len(words) and words[index + 1].glued:
        return False
    return not has_protected_punctuation(words[index].mark)


def apply_suggestions(document: Document, history: History, policy: ApplyPolicy) -> int:
    """Accept, as one step, what ``policy`` settles without review (``commands.accept_confident``)."""
    ids = commands.accept_confident(document.suggestions, policy)
    if ids:
        history.do(commands.accept_many(document, ids))
    return len(ids)


def sentence_casing(document: Document, language: str | None = None) -> Step:
    """Capitalise the first word of every sentence, and the words ``language`` always spells with
    a capital (English days, months and "I"); capitals already there are never lowered."""
    words = list(document.words())
    edits = []
    for index, word in enumerate(words):
        if word.casing is Casing.LOWER and word.casable and capitalised_on_export(words, index, language):
            edits.append(
                WordEdit(index, word, replace(word, text=apply_casing(word.text, Casing.CAPITALISED)))
            )
    return Step("Capitalise sentence starts", tuple(edits))


def suggestions_json(document: Document, info: dict[str, Any]) -> str:
    cue_of = [ref.cue for ref in (document.locate(i) for i in range(document.word_count))]
    items = [
        {
            "id": s.id,
            "word_index": s.gap,
            "word": document.word(s.gap).text,
            "cue": cue_of[s.gap] + 1,
            "mark": s.mark,
            "casing": s.casing.value if s.casing else None,
            "probabilities": s.probabilities,
            "confidence": s.confidence,
            "source": s.source.value,
            "evidence": s.evidence if s.source is Source.MODEL else "reference",
            "status": s.status.value,
        }
        for s in document.suggestions
    ]
    return json.dumps({**info, "suggestions": items}, indent=2, ensure_ascii=False) + "\n"


@dataclass
class PunctuateOutcome:
    """A file punctuated as ``punctum punctuate`` does it."""

    document: Document  # with the accepted suggestions applied and sentence starts capitalised
    suggestions: list[Suggestion]
    applied: int
    report: AnalysisReport

    def suggestions_json(self) -> str:
        return suggestions_json(self.document, self.report.as_json())


def punctuate_file(request: AnalysisRequest, punctuator: Punctuator, policy: ApplyPolicy) -> PunctuateOutcome:
    """Analyse one file, then accept what ``policy`` settles and capitalise sentence starts."""
    from app.services.analysis import analyse

    analysis = analyse(request, punctuator)
    document, report = analysis.document, analysis.report
    known = {s.id for s in document.suggestions}  # the reference's, there already
    document.add_suggestions([s for s in analysis.suggestions if s.id not in known])
    history = History(document)
    applied = apply_suggestions(document, history, policy)
    if policy.how != "none":
        history.do(sentence_casing(document, report.language))
    return PunctuateOutcome(document, analysis.suggestions, applied, report)
