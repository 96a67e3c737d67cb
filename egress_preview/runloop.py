"""Closing an event loop the Pulumi SDK ran on, the way ``asyncio.run`` closes its own.

The SDK schedules every registration, invoke and output as a task. A program that stops early (an error, or a test that
runs ``__main__.py`` without ``pulumi.runtime.test``) leaves some pending; closing the loop over them makes asyncio
report each one as "Task was destroyed but it is pending" when it is collected, at some later, unrelated moment.
"""
from __future__ import annotations

import asyncio


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still pending, let it unwind, stop async generators and the default executor, close the loop."""
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            # Exceptions here belong to a run that already ended (and reported); each task is retrieved, so none is logged.
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
