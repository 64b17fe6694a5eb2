"""Progress for long fetches and history runs: a rich bar on a terminal, plain lines otherwise.

The source layer and the history runner report through `Progress`; they never print."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from apron.extractors.progress import NullProgress, Progress

__all__ = ["LineProgress", "NullProgress", "Progress", "progress_for"]


class LineProgress(Progress):
    """Plain lines for logs and pipes: every stage, and a count at most every few seconds."""

    def __init__(self, stream: TextIO | None = None, every_seconds: float = 2.0) -> None:
        self._stream = stream or sys.stderr
        self._every = every_seconds
        self._label = ""
        self._total = 0
        self._done = 0
        self._last = 0.0

    def _line(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def stage(self, message: str) -> None:
        self._line(message)

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._done = label, total, 0
        self._last = time.monotonic()
        self._line(f"{label}: 0/{total}")

    def advance(self, amount: int = 1) -> None:
        self._done += amount
        now = time.monotonic()
        if now - self._last >= self._every:
            self._last = now
            self._line(f"{self._label}: {self._done}/{self._total}")

    def finish(self) -> None:
        if self._label:
            self._line(f"{self._label}: {self._done}/{self._total} done")
        self._label = ""


class RichProgress(Progress):
    """A rich progress bar on the terminal (stderr); stages print above it."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self._console = Console(stderr=True, highlight=False)
        self._bar = Bar(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._console,
            transient=True,
        )
        self._task = None
        self._live = False

    def _ensure(self) -> None:
        if not self._live:
            self._bar.start()
            self._live = True

    def stage(self, message: str) -> None:
        self._ensure()
        self._console.print(message, markup=False)

    def start(self, label: str, total: int) -> None:
        self._ensure()
        self._task = self._bar.add_task(label, total=total)

    def advance(self, amount: int = 1) -> None:
        if self._task is not None:
            self._bar.advance(self._task, amount)

    def finish(self) -> None:
        if self._task is not None:
            self._bar.remove_task(self._task)
            self._task = None

    def close(self) -> None:
        if self._live:
            self._bar.stop()
            self._live = False


def progress_for(stream: TextIO | None = None) -> Progress:
    """A rich bar when `stream` (default stderr) is a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return RichProgress()
    return LineProgress(stream)
