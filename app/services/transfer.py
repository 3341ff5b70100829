"""Reference transfer as a use case: read a reference and captions, propose the reference's marks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.align.transfer import transfer
from app.core import commands
from app.core.history import History
from app.core.model import Document, Source, Status, Word
from app.formats import FormatError, read_document, write_file
from app.formats.corpora import read_iwslt_xml, read_token_tags

#: Reference formats beyond the caption formats, for evaluation sets.
_XML = {".xml"}
_TOKEN_TAGS = {".tsv", ".tags", ""}


def read_reference(path: Path | str) -> list[Word]:
    """Words of a reference transcript: plain text, SRT, VTT, IWSLT XML or a token-tag file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _XML:
        return [word for segment in read_iwslt_xml(path) for word in segment]
    if suffix in _TOKEN_TAGS and path.is_file():
        return read_token_tags(path)
    if not path.exists():
        raise FormatError(path, None, "No such file or directory")
    return list(read_document(path).words())


@dataclass
class TransferOutcome:
    document: Document
    report: dict[str, object]

    @property
    def warnings(self) -> list[str]:
        warnings = self.report.get("warnings", [])
        return [str(w) for w in warnings] if isinstance(warnings, list) else []


def propose_from_reference(
    document: Document, reference: list[Word], language: str = "en"
) -> dict[str, object]:
    """Add the reference's marks and capitals to ``document`` as pending suggestions."""
    document.language = document.language or language
    result = transfer(list(document.words()), reference, language, first_id=document.next_suggestion_id())
    document.add_suggestions(result.suggestions)
    return result.report


def transfer_to_file(
    reference_path: Path | str,
    captions_path: Path | str,
    output: Path | str,
    language: str = "en",
    casing: bool = True,
    report_path: Path | str | None = None,
) -> TransferOutcome:
    """The reference's marks (and capitals, with ``casing``) written into the captions at ``output``,
    exported as every caption file is (sentence starts capitalised, unless ``casing`` is off). A
    transfer that carried nothing (a reference for another video) gives the captions back as they were."""
    from app.services.captions_export import ExportOptions, export_captions

    document = read_document(captions_path)
    report = propose_from_reference(document, read_reference(reference_path), language)
    report["reference"] = str(reference_path)
    report["captions"] = str(captions_path)
    carried = [
        s.id
        for s in document.suggestions
        if s.source is Source.REFERENCE and s.status is Status.PENDING and (casing or s.casing is None)
    ]
    History(document).do(commands.accept_many(document, carried))
    export_captions(document, output, language, ExportOptions(capitalise=casing and bool(carried)))
    if report_path:
        write_file(report_path, (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode())
    return TransferOutcome(document, report)
