"""``python -m app`` is the ``punctum`` command (``app.launch``)."""

try:
    from app.launch import run
except KeyboardInterrupt:  # Ctrl+C while the start itself is imported: as ``launch`` says it
    import os
    import sys

    sys.stderr.write("punctum: interrupted\n")
    sys.stderr.flush()
    os._exit(130)  # ``app.core.errors.EXIT_INTERRUPTED``, which may not be imported yet

run()
