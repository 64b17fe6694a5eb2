"""Parse many files on two cores: a forked worker takes the first share of the files, this
process the rest, and the results come back in order as plain data (trees cannot be pickled).

Only where it pays: a fork and the pickled results cost about 20 ms, so below `MIN_BYTES` of
text, with one usable core, or inside a daemonic worker (`extract history` already runs one
per core) everything runs here. Errors are those of running serially: when the worker fails,
this process runs the worker's share itself and raises the first error in order."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

MIN_BYTES = 1_000_000


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _may_fork(total: int) -> bool:
    return (
        total >= MIN_BYTES
        and usable_cores() >= 2
        and not multiprocessing.current_process().daemon
        and "fork" in multiprocessing.get_all_start_methods()
    )


def map_in_two(
    function: Callable[[Item], Result], items: Sequence[Item], sizes: Sequence[int]
) -> list[Result]:
    """[function(item) for item in items], the first items (about half of `sizes`) in a forked
    worker when that pays. `function` must return picklable plain data."""
    total = sum(sizes)
    if len(items) < 2 or not _may_fork(total):
        return [function(item) for item in items]
    cut, running = 0, 0
    while cut < len(items) - 1 and running + sizes[cut] <= total / 2:
        running += sizes[cut]
        cut += 1
    cut = max(cut, 1)
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)

    def share() -> None:
        reader.close()
        try:
            writer.send(("ok", [function(item) for item in items[:cut]]))
        except BaseException:  # the parent runs this share again and raises the error itself
            writer.send(("failed", None))
        writer.close()

    worker = context.Process(target=share, daemon=True)
    try:
        worker.start()
    except OSError:
        reader.close()
        writer.close()
        return [function(item) for item in items]
    writer.close()
    rest_error: Exception | None = None
    rest: list[Result] = []
    status, first = "failed", None
    received = False
    try:
        try:
            rest = [function(item) for item in items[cut:]]
        except Exception as err:  # raised only if the worker's share has no error of its own
            rest_error = err
        try:
            status, first = reader.recv()  # from the worker forked above, through its pipe
        except (EOFError, OSError):
            pass
        received = True
    finally:
        reader.close()
        if not received:
            worker.terminate()  # interrupted: do not wait for the worker's share
        worker.join()
    if status != "ok":
        first = [function(item) for item in items[:cut]]
    if rest_error is not None:
        raise rest_error
    return [*first, *rest]
