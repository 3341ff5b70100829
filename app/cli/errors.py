"""The command's exit statuses, and the error for a command line that asks for the impossible."""

from __future__ import annotations

from app.core.errors import PunctumError

EXIT_OK, EXIT_USAGE, EXIT_BAD_INPUT = 0, 2, 3


class UsageError(PunctumError):
    exit_code = EXIT_USAGE
