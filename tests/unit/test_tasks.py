"""BackgroundTask: a loop that fails is logged when it fails, and closing it never raises."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from apiserver.tasks import BackgroundTask


class Records(logging.Handler):
    """Keeps the records of one logger and wakes whoever waits for the next one."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.arrived = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.arrived.set()


@pytest.fixture
def records() -> Iterator[tuple[logging.Logger, Records]]:
    logger = logging.getLogger("tests.tasks")
    handler = Records()
    logger.addHandler(handler)
    try:
        yield logger, handler
    finally:
        logger.removeHandler(handler)


async def test_a_failing_task_is_logged_with_its_exception_and_close_does_not_raise(
    records: tuple[logging.Logger, Records],
) -> None:
    logger, handler = records

    async def run() -> None:
        raise RuntimeError("the loop broke")

    task = BackgroundTask("example loop", run, logger)
    task.start()
    await asyncio.wait_for(handler.arrived.wait(), 30)  # a safety net, not a measure
    [record] = handler.records
    assert record.levelno == logging.ERROR
    assert "example loop" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)
    await task.close()  # does not raise the loop's exception


async def test_close_cancels_a_running_task_quietly_and_start_runs_it_again(
    records: tuple[logging.Logger, Records],
) -> None:
    logger, handler = records
    started = 0
    running = asyncio.Event()

    async def run() -> None:
        nonlocal started
        started += 1
        running.set()
        await asyncio.Event().wait()

    task = BackgroundTask("example loop", run, logger)
    task.start()
    task.start()  # already running: not a second copy
    await running.wait()
    await task.close()
    running.clear()
    task.start()
    await running.wait()
    await task.close()
    assert started == 2
    assert handler.records == []  # a cancelled task is not a failure
