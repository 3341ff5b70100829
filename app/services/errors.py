"""The store's errors as the editor and the command line meet them: they reach the store through
services only."""

from app.store.errors import DatabaseError, in_use_failure

__all__ = ["DatabaseError", "in_use_failure"]
