"""Errors shared by every layer, and the ``punctum`` command's exit statuses they end with."""

#: Done; asked for the impossible (a usage error: options that contradict, a file of the wrong
#: kind named); a file or project that cannot be read or written.
EXIT_OK, EXIT_USAGE, EXIT_BAD_INPUT = 0, 2, 3
#: Stopped by Ctrl+C, or by SIGTERM, ending as a process the signal killed would (128 + signal).
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class PunctumError(Exception):
    """An error the user caused or can fix; shown as one line, never a traceback."""

    #: Exit status of the ``punctum`` command when this error stops it.
    exit_code = EXIT_BAD_INPUT


class UsageError(PunctumError):
    """The user asked for what cannot be done (as the command line's usage errors are)."""

    exit_code = EXIT_USAGE


def error_line(error: BaseException) -> str:
    """The first line of what ``error`` says, or its kind when it says nothing: how a library's
    error is told in one line."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def file_failure(error: BaseException) -> str | None:
    """The one rule that turns a file's failure into its outcome (batch workers here or on Ray,
    transcribing a folder): the one-line reason when ``error`` is about the file (what Punctum
    refuses, what the disk or a library reading the file raises, CTranslate2's RuntimeError
    included), so that the other files go on; None for a bug in Punctum (KeyError, IndexError,
    TypeError...), which the caller lets through so that it stays visible."""
    if isinstance(error, PunctumError):
        return str(error)
    if isinstance(error, MemoryError):
        return "out of memory"
    if isinstance(error, (NotImplementedError, RecursionError)):
        return None
    if isinstance(error, (OSError, ValueError, RuntimeError)):
        return f"{type(error).__name__}: {error_line(error)}" if str(error).strip() else type(error).__name__
    return None


def failure_line(error: BaseException) -> str:
    """How the editor tells slow work that failed, in one line for its dialog: what Punctum refuses
    as it says it, running out of memory as such, anything else (a model or a decoder) by its kind.
    Unlike ``file_failure`` it has no bugs to let through: the dialog is where they are seen."""
    if isinstance(error, PunctumError):
        return str(error)
    if isinstance(error, MemoryError):
        return "out of memory"
    return f"{type(error).__name__}: {error}"


def bug_report(error: BaseException) -> str:
    """A bug met on one file, told as one: what it was, and that it is Punctum's, not the file's."""
    return f"processing crashed: a bug in Punctum ({type(error).__name__}: {error}); please report it"
