"""``python -m app.cli``, as ``python -m app``: the ``punctum`` command, with the same start-up
(Ctrl+C at any moment, its imports included, is one line and exit status 130)."""

import runpy

runpy.run_module("app", run_name="__main__", alter_sys=True)
