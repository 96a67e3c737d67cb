"""Pausing the cyclic garbage collector around bulk, cycle-free work (loading and resolving the matrix)."""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    """Pause the cyclic garbage collector: resolution allocates many small objects and no cycles, and with a
    large catalog alive the collector's full passes would make the run grow faster than the matrix does."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
