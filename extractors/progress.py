"""How long work reports its progress: the interface the source layer and the history runner
report through (they never print), and its silent implementation. The bars and lines that show
it are the commands' (commands/progress.py)."""

from __future__ import annotations


class Progress:
    """The interface, and the silent implementation."""

    def stage(self, message: str) -> None:
        """A one-off step (a fetch, a discovery pass)."""

    def start(self, label: str, total: int) -> None:
        """Begin counting `total` units of work."""

    def advance(self, amount: int = 1) -> None: ...

    def finish(self) -> None:
        """The counted work is done."""

    def close(self) -> None:
        """Stop any live display."""


NullProgress = Progress
