"""Commit metadata and first-parent history from `git log` on a cache repository."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

NULL_SHA = "0" * 40
LOG_FORMAT = "%H%x00%P%x00%cI%x00%s"


@dataclass(frozen=True)
class ResolvedCommit:
    sha: str
    date: str  # committer date, YYYY-MM-DD
    subject: str
    parent: str = ""  # first parent; "" for a root commit or when not known


def parse_log(out: str) -> list[ResolvedCommit]:
    """Commits from `git log --format=LOG_FORMAT` output."""
    commits = []
    for line in out.splitlines():
        if line.count("\x00") < 3:
            continue
        sha, parents, date, subject = line.split("\x00", 3)
        parent = parents.split()[0] if parents.strip() else ""
        commits.append(ResolvedCommit(sha=sha, date=date[:10], subject=subject, parent=parent))
    return commits


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def pathspecs(files: Iterable[str], dirs: Iterable[str]) -> list[str]:
    """Literal pathspecs for `files`, and one per directory for the files directly inside it."""
    specs = [f":(top,literal){p}" for p in sorted(set(files))]
    for directory in sorted({d.strip("/") for d in dirs}):
        specs.append(f":(top,glob){_glob_escape(directory)}/*" if directory else ":(top,glob)*")
    return specs


def first_parent_changes(
    git: Callable[..., str],
    since: ResolvedCommit,
    until: ResolvedCommit,
    files: Iterable[str] = (),
    dirs: Iterable[str] = (),
) -> list[tuple[ResolvedCommit, list[tuple[str, str]]]]:
    """First-parent commits after `since` up to `until` that changed one of `files` or a file
    directly inside one of `dirs`, oldest first, each with the (path, new blob SHA) of the
    regular files it changed there (deletions left out). One `git log` over the range."""
    specs = pathspecs(files, dirs)
    if not specs:
        return []
    out = git(
        "log",
        "--first-parent",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        f"--format=%x01{LOG_FORMAT}",
        f"{since.sha}..{until.sha}",
        "--",
        *specs,
    )
    found: list[tuple[ResolvedCommit, list[tuple[str, str]]]] = []
    for chunk in out.split("\x01")[1:]:
        header, _, raw = chunk.partition("\n")
        commit = parse_log(header)[0]
        changed = []
        for line in raw.splitlines():
            if not line.startswith(":"):
                continue
            fields, _, path = line[1:].partition("\t")
            parts = fields.split()
            if len(parts) >= 4 and parts[1] in ("100644", "100755") and parts[3] != NULL_SHA:
                changed.append((path, parts[3]))
        found.append((commit, changed))
    return list(reversed(found))


def ancestry_graph(
    git: Callable[..., str], tips: Iterable[str], excluded: Iterable[str] = ()
) -> list[tuple[str, tuple[str, ...]]]:
    """Every commit reachable from `tips` and not from `excluded`, with its parents, parents
    before their children. One `git rev-list` (revisions on stdin)."""
    revisions = [*dict.fromkeys(tips), *(f"^{sha}" for sha in dict.fromkeys(excluded))]
    if not revisions:
        return []
    out = git(
        "rev-list",
        "--parents",
        "--topo-order",
        "--reverse",
        "--stdin",
        stdin="\n".join(revisions) + "\n",
    )
    graph = []
    for line in out.splitlines():
        sha, *parents = line.split()
        graph.append((sha, tuple(parents)))
    return graph
