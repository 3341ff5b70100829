"""``python -m app`` is the ``punctum`` command.

Ctrl+C stops it at any moment, its start-up imports included, with one line and exit status 130;
a run a shell started in the background (with SIGINT ignored) stops on SIGINT too.
"""

import signal
import sys

signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    from app.cli import main
except KeyboardInterrupt:
    sys.stderr.write("punctum: interrupted\n")
    sys.exit(130)

sys.exit(main())
