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


def _reported_when_collected(held: list) -> list[str]:
    """What asyncio logs when the task ``held`` (its only reference) is collected; caught by a handler of its own (no
    pytest plugin needed), so the suite's output shows nothing."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        held.clear()
        gc.collect()
    finally:
        logger.removeHandler(handler)
    return [r.getMessage().splitlines()[0] for r in records]


def test_close_loop_cancels_what_is_pending():
    loop, task = _loop_with_a_pending_task()
    close_loop(loop)
    assert loop.is_closed() and task.cancelled()
    held = [task]
    del task
    assert _reported_when_collected(held) == []


def test_a_bare_close_would_leave_it_to_be_reported():
    """The defect close_loop removes, shown on the same loop: if this stops logging, the test above proves nothing."""
    loop, task = _loop_with_a_pending_task()
    loop.close()
    held = [task]
    del task
    assert _reported_when_collected(held) == ["Task was destroyed but it is pending!"]


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


_AFTER_A_FAILED_PROGRAM_TEST = '''
import pulumi
import pytest


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}


def test_a_fails_with_registrations_pending(loop):
    pulumi.runtime.set_mocks(Mocks(), project="p", stack="s", preview=False)
    pulumi.CustomResource("t:index:Thing", "left-pending", {"x": 1})
    assert False, "failed on purpose, its registration still queued"


def test_b_runs_a_program_on_a_loop_of_its_own():
    pulumi.runtime.set_mocks(Mocks(), project="p", stack="s", preview=False)

    @pulumi.runtime.test
    def program():
        return pulumi.CustomResource("t:index:Thing", "fresh", {"x": 2}).urn.apply(lambda urn: urn.endswith("::fresh") or pytest.fail(urn))

    program()
'''


def test_a_failed_program_test_leaves_nothing_for_the_next_one(tmp_path):
    """The loop fixture's teardown: the failed test's pending registration is cancelled (not reported as destroyed
    later) and its root stack is not reused by the next test's mocks (its futures belong to the closed loop)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    (tmp_path / "test_pair.py").write_text(_AFTER_A_FAILED_PROGRAM_TEST)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests), str(tests.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging", "-p", "conftest",
                           "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_pair.py")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    output = done.stdout + done.stderr
    assert "1 failed, 1 passed" in output, output
    assert "FAILED test_pair.py::test_a_fails_with_registrations_pending" in output
    assert "Task was destroyed" not in output and "was never retrieved" not in output, output
