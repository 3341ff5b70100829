"""The editor window (PySide6). Everything below this package runs without Qt."""
