"""Use cases shared by the command line and the editor; no Qt, no torch at import time."""
