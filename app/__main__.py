"""``python -m app`` is the ``punctum`` command."""

import sys

from app.cli import main

sys.exit(main())
