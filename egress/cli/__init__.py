"""The ``egress`` command line: a thin layer over the core, one module per group of commands.

Exit codes: 0 ok, 1 user error (one clear message, no traceback), 2 usage error; some commands add their own (explain
3: something denied; learn 3: proposals written). Each command imports what it uses inside its function, so importing
every module here (their registration on ``app``) stays cheap (tests/test_cli_startup.py).
"""
from __future__ import annotations

from . import matrix, offline, logs, proxy, docs, fleet  # noqa: F401  (registration order is the order --help lists)
from .app import app, main
from .offline import TARGET_NAMES

__all__ = ["TARGET_NAMES", "app", "main"]
