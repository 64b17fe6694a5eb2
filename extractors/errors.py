"""The one error hierarchy of the extractor: every failure names engine, commit, paths and anchor."""

from __future__ import annotations

from collections.abc import Sequence


class ExtractionError(Exception):
    """Root of every error the tool raises on purpose. The CLI prints `str(err)` and exits nonzero."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        engine: str | None = None,
        commit: str | None = None,
        source: str | None = None,
        paths: Sequence[str] = (),
        anchor: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.engine = engine
        self.commit = commit
        self.source = source
        self.paths = tuple(paths)
        self.anchor = anchor

    def with_context(
        self, *, engine: str | None = None, commit: str | None = None, source: str | None = None
    ) -> ExtractionError:
        """Fill in the engine/commit/source that a pure parser could not know; returns self."""
        self.engine = self.engine or engine
        self.commit = self.commit or commit
        self.source = self.source or source
        return self

    def __str__(self) -> str:
        parts = [self.message]
        if self.engine:
            parts.append(f"engine: {self.engine}")
        if self.commit:
            parts.append(f"commit: {self.commit}")
        if self.source:
            parts.append(f"source: {self.source}")
        if self.paths:
            parts.append("paths tried: " + ", ".join(self.paths))
        if self.anchor:
            parts.append(f"anchor: {self.anchor}")
        return "\n  ".join(parts)


class PinError(ExtractionError):
    """A pin file is missing, malformed, or names an unknown engine."""


class UsageError(ExtractionError):
    """A command-line argument is invalid (bad engine id, bad commit, bad source URL)."""


class SourceError(ExtractionError):
    """The git source layer could not provide what was asked."""


class SourceUnreachableError(SourceError):
    """The source URL or path cannot be reached or is not a git repository."""


class UnknownCommitError(SourceError):
    """The commit does not exist at the source."""


class AbbreviatedCommitError(UnknownCommitError):
    """An abbreviated SHA that neither the cache nor a local source can resolve."""


class MissingPathError(SourceError):
    """A file that must exist at the commit does not."""


class CacheError(SourceError):
    """The local git cache is unusable."""


class CacheCorruptError(CacheError):
    """The cache's object store is damaged (truncated pack, missing object it had): the
    pipeline rebuilds the cache once and retries."""


class AnchorError(ExtractionError):
    """A file exists but the function, dict, switch or table the extractor needs is not in it,
    or it is present and empty."""


class ParseError(ExtractionError):
    """A source file does not parse (bad syntax, bad encoding, too large, too deep)."""


class GuardError(ExtractionError):
    """A bump would shrink a fact set by more than half or lose an anchor."""


class FactGraphError(ExtractionError):
    """An engine's fact declarations do not form a graph the runner can order: a name is
    declared twice, a fact needs a name the engine does not have, or the needs form a cycle."""


class GeneratedError(ExtractionError):
    """A committed generated/ module cannot be read back: it does not load, does not match
    generated/schema.py, or its rows no longer fit the record type. Names the file and field."""
