"""Release tags on a fact's timeline: which release tags contain which commits (one pass over the
commit graph), the first and last release that had an item, and vLLM's own "previously
supported up to version V" claims checked against them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

NO_TAGS = "no release tags in the source: releases not shown"


@dataclass(frozen=True)
class ReleaseTag:
    """A tag of the source that names a release, and the commit it points to (peeled)."""

    name: str
    commit: str


def version_key(name: str) -> tuple[int, ...]:
    """The numbers in a tag name, in order: `v0.10.1` -> (0, 10, 1), `b8904` -> (8904,)."""
    return tuple(int(n) for n in re.findall(r"\d+", name))


def release_tags(listed: Iterable[tuple[str, str]], pattern: str) -> list[ReleaseTag]:
    """The tags (name, peeled commit) whose whole name matches the engine's release pattern,
    oldest version first (by the numbers in the name, never by date)."""
    matcher = re.compile(pattern)
    found = {ReleaseTag(name, sha) for name, sha in listed if matcher.fullmatch(name)}
    return sorted(found, key=lambda t: (version_key(t.name), t.name))


def containment(
    graph: Iterable[tuple[str, Sequence[str]]], marked: Sequence[str]
) -> dict[str, int]:
    """For every commit of `graph` ((commit, parents), parents listed before their children),
    the bit set of the `marked` commits it contains (bit i: `marked[i]` is the commit itself or
    one of its ancestors). Parents outside the graph contribute nothing."""
    own: dict[str, int] = {}
    for i, sha in enumerate(marked):
        own[sha] = own.get(sha, 0) | 1 << i
    reach: dict[str, int] = {}
    for sha, parents in graph:
        bits = own.get(sha, 0)
        for parent in parents:
            bits |= reach.get(parent, 0)
        reach[sha] = bits
    return reach


def tags_containing(
    graph: Iterable[tuple[str, Sequence[str]]],
    tags: Sequence[ReleaseTag],
    commits: Sequence[str],
) -> dict[str, tuple[ReleaseTag, ...]]:
    """Per commit of `commits`, the tags (in the order of `tags`) whose commit contains it."""
    marked = list(dict.fromkeys(commits))
    reach = containment(graph, marked)
    out: dict[str, list[ReleaseTag]] = {sha: [] for sha in marked}
    for tag in tags:
        bits = reach.get(tag.commit, 0)
        for i, sha in enumerate(marked):
            if bits >> i & 1:
                out[sha].append(tag)
    return {sha: tuple(found) for sha, found in out.items()}


def tags_contained(
    graph: Iterable[tuple[str, Sequence[str]]], tags: Sequence[ReleaseTag], commit: str
) -> tuple[ReleaseTag, ...]:
    """The tags (in the order of `tags`) whose commit `commit` contains."""
    marked = [t.commit for t in tags]
    bits = containment(graph, marked).get(commit, 0)
    return tuple(t for i, t in enumerate(tags) if bits >> i & 1)


@dataclass(frozen=True)
class ReleaseSpan:
    """The releases that had one interval of an item: each contains the commit where it appeared
    and not the commit that removed it. `first` and `last` are None when no release did."""

    first: ReleaseTag | None
    last: ReleaseTag | None
    count: int


def release_span(
    containing_first: Sequence[ReleaseTag], containing_removal: Sequence[ReleaseTag] = ()
) -> ReleaseSpan:
    """The releases (in version order) that contain the appearance and not the removal."""
    removed = set(containing_removal)
    had = [t for t in containing_first if t not in removed]
    return ReleaseSpan(had[0] if had else None, had[-1] if had else None, len(had))


@dataclass(frozen=True)
class PreviousSupportCheck:
    """One architecture the engine lists as previously supported up to `claimed`, set against
    the timeline's last release that had it (`found`; "" when no release in the range had it)."""

    architecture: str
    claimed: str
    found: str
    agrees: bool
    note: str


def previous_support_checks(
    claims: Mapping[str, str], last_release: Mapping[str, ReleaseTag | None]
) -> list[PreviousSupportCheck]:
    """Compare each claim (architecture -> last version, as the engine writes it) with the last
    release the timeline says had the architecture. Versions compare by their numbers, so
    `0.10.1` agrees with the tag `v0.10.1`. Architectures the timeline never saw are left out."""
    checks = []
    for arch in sorted(claims):
        if arch not in last_release:
            continue
        claimed = claims[arch]
        tag = last_release[arch]
        if tag is None:
            checks.append(
                PreviousSupportCheck(arch, claimed, "", False, "no release tag in the range had it")
            )
            continue
        agrees = version_key(tag.name) == version_key(claimed)
        note = (
            "agrees"
            if agrees
            else f"the engine says last in {claimed}; the timeline's last release with it is "
            f"{tag.name}"
        )
        checks.append(PreviousSupportCheck(arch, claimed, tag.name, agrees, note))
    return checks
