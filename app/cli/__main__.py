"""``python -m app.cli``, as ``python -m app``: the ``punctum`` command."""

import sys

from app.cli import main

sys.exit(main())
