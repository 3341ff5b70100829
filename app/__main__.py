"""``python -m app`` is the ``punctum`` command (``app.launch``)."""

from app.launch import run

run()
