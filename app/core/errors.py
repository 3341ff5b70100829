"""Errors shared by every layer."""


class PunctumError(Exception):
    """An error the user caused or can fix; shown as one line, never a traceback."""

    #: Exit status of the ``punctum`` command when this error stops it.
    exit_code = 3
