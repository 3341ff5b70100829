"""The About box and the application icon."""

from __future__ import annotations

import html

from PySide6.QtGui import QIcon

from app.core.bundled import icon_dir
from app.services.about import About


def about_html(info: About) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{html.escape(version)}</td><td>{html.escape(licence)}</td></tr>"
        for name, version, licence in info.components
    )
    return (
        f"<h3>Punctum {html.escape(info.version)}</h3>"
        "<p>Puts punctuation back into automatic captions, for a person to review.</p>"
        f"<p><b>Model:</b> {html.escape(info.model)}, version {html.escape(info.model_version)}.<br>"
        f"{html.escape(info.data_note)}</p>"
        "<p>Punctum is MIT licensed. It bundles:</p>"
        f"<table cellspacing='6'>{rows}</table>"
    )


def application_icon() -> QIcon:
    """Punctum's icon at every size drawn, with the SVG for the rest."""
    folder = icon_dir()
    icon = QIcon()
    for png in sorted(folder.glob("punctum-*.png")):
        icon.addFile(str(png))
    if (folder / "punctum.svg").is_file():
        icon.addFile(str(folder / "punctum.svg"))
    return icon
