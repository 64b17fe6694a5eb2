"""The terminal consoles of `apron` and `extract`: rich Consoles whose printed strings pass
apron.terminal.printable first (kept apart from apron.terminal, so `import apron` stays free of
rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from apron.terminal import printable


class EscapingConsole(Console):
    """A rich Console whose printed strings pass `printable` first: the consoles of `apron` and
    `extract` are these, so no message reaches the terminal with a raw control character."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(printable(o) if isinstance(o, str) else o for o in objects), **kwargs)
