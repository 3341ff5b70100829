"""Punctum: restore and review punctuation in ASR captions."""

__version__ = "0.1.0"
