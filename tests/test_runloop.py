"""A loop the SDK ran on is closed as ``asyncio.run`` closes its own: nothing left pending to be reported, later and
elsewhere, as "Task was destroyed but it is pending"."""
from __future__ import annotations

import asyncio
import gc
import logging

from egress_preview.runloop import close_loop


def _loop_with_a_pending_task():
    loop = asyncio.new_event_loop()
    never = loop.create_future()

    async def waits_forever():
        await never

    task = loop.create_task(waits_forever())
    loop.run_until_complete(asyncio.sleep(0))  # started, now waiting: as an RPC the mocks never answered
    return loop, task


def test_close_loop_cancels_what_is_pending(caplog):
    loop, task = _loop_with_a_pending_task()
    close_loop(loop)
    assert loop.is_closed() and task.cancelled()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        del task
        gc.collect()
    assert [r.getMessage() for r in caplog.records if "destroyed" in r.getMessage()] == []


def test_a_bare_close_would_leave_it_to_be_reported(caplog):
    """The defect close_loop removes, shown on the same loop: if this stops logging, the test above proves nothing."""
    loop, task = _loop_with_a_pending_task()
    loop.close()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        del task
        gc.collect()
    assert [r.getMessage().splitlines()[0] for r in caplog.records if "destroyed" in r.getMessage()] == ["Task was destroyed but it is pending!"]


def test_close_loop_closes_even_when_a_task_fails_as_it_unwinds():
    loop = asyncio.new_event_loop()

    async def fails_on_cancel():
        try:
            await loop.create_future()
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    loop.create_task(fails_on_cancel())
    loop.run_until_complete(asyncio.sleep(0))
    close_loop(loop)
    assert loop.is_closed()
