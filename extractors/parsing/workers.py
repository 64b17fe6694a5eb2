"""Share a map over many items (files to parse, facts to run) between two cores: this process
and a forked worker take the items one at a time, largest first, from a shared counter (so
neither waits long for the other, whichever started late or runs on a busier core), and the
results come back in order as plain data (trees cannot be pickled).

Only where it pays: a fork and the pickled results cost about 20 ms, so below `MIN_BYTES` of
text, with one usable core, inside a daemonic worker (`extract history` already runs one per
core) or inside another map this process shares, everything runs here. Errors are those of
running serially: an item that failed, or that the worker took but did not return, is run
again here in order, so the first error in order is the one raised."""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

MIN_BYTES = 1_000_000
_sharing = False  # True while this process shares a map with a worker: nested maps run here


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def may_share(total: int) -> bool:
    """Whether a map over items of `total` bytes of text is shared with a forked worker."""
    return (
        total >= MIN_BYTES
        and not _sharing
        and usable_cores() >= 2
        and not multiprocessing.current_process().daemon
        and "fork" in multiprocessing.get_all_start_methods()
    )


def map_in_two(
    function: Callable[[Item], Result], items: Sequence[Item], sizes: Sequence[int]
) -> list[Result]:
    """[function(item) for item in items], shared with a forked worker when that pays.
    `function` must return picklable plain data."""
    total = sum(sizes)
    if len(items) < 2 or not may_share(total):
        return [function(item) for item in items]
    order = sorted(range(len(items)), key=lambda i: (-sizes[i], i))
    context = multiprocessing.get_context("fork")
    claimed = context.Value("i", 0)  # how many of `order` either process has taken

    def take() -> int | None:
        with claimed.get_lock():
            at = claimed.value
            if at >= len(order):
                return None
            claimed.value = at + 1
        return order[at]

    def run_share() -> list[tuple[int, Result]]:
        """Results of the items taken here, until none is left or one fails (that one is
        left out: the parent runs it again in order)."""
        done: list[tuple[int, Result]] = []
        while (index := take()) is not None:
            try:
                done.append((index, function(items[index])))
            except Exception:
                break
        return done

    reader, writer = context.Pipe(duplex=False)

    def share() -> None:
        reader.close()
        try:
            writer.send(run_share())
        except BaseException:  # the parent runs what it did not get back
            writer.send([])
        writer.close()

    worker = context.Process(target=share, daemon=True)
    gc.freeze()  # the objects alive now are never collected in the worker: no page is copied
    try:
        worker.start()
    except OSError:
        reader.close()
        writer.close()
        return [function(item) for item in items]
    finally:
        gc.unfreeze()
    writer.close()
    results: dict[int, Result] = {}
    received = False
    global _sharing
    _sharing = True
    try:
        results.update(run_share())
        try:
            results.update(reader.recv())  # from the worker forked above, through its pipe
        except (EOFError, OSError):
            pass
        received = True
    finally:
        _sharing = False
        reader.close()
        if not received:
            worker.terminate()  # interrupted: do not wait for the worker's share
        worker.join()
    return [results[i] if i in results else function(item) for i, item in enumerate(items)]
