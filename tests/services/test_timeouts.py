"""``within`` never loses its caller's cancellation, where Python 3.11's
``asyncio.wait_for`` does when the result arrives as the task is cancelled (a CI run hung
on a host monitor told to stop as its agent's next line came in)."""

from __future__ import annotations

import asyncio

import pytest

from rgt_tui.timeouts import within


async def _stopped_as_a_result_comes(wait) -> asyncio.Task:  # noqa: ANN001
    """A loop of timed waits, cancelled in the same step its awaited result is set."""
    futures: list[asyncio.Future] = []

    async def loop_of_waits() -> None:
        while True:
            futures.append(asyncio.get_running_loop().create_future())
            await wait(futures[-1], 30)

    task = asyncio.ensure_future(loop_of_waits())
    while not futures:
        await asyncio.sleep(0)
    for _ in range(5):  # wait_for hands the future to an inner task: let it start
        await asyncio.sleep(0)
    futures[-1].set_result("a line")
    task.cancel()
    await asyncio.wait({task}, timeout=2)
    return task


async def test_a_cancel_as_the_result_comes_ends_the_loop():
    task = await _stopped_as_a_result_comes(within)
    assert task.cancelled()


async def test_the_race_is_real_with_wait_for_on_this_python():
    # The reason for within: on 3.10/3.11 the same loop through wait_for carries on.
    import sys

    task = await _stopped_as_a_result_comes(asyncio.wait_for)
    try:
        assert task.cancelled() is (sys.version_info >= (3, 12))
    finally:
        task.cancel()
        await asyncio.wait({task})


async def test_a_timeout_raises_and_ends_what_it_waited_for():
    ended = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            ended.set()

    with pytest.raises(asyncio.TimeoutError):
        await within(slow(), 0.01)
    assert ended.is_set()
    assert await within(asyncio.sleep(0, "done"), None) == "done"
    assert await within(asyncio.sleep(0, "done"), 5) == "done"
