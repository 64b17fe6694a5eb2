"""Release tags on the history timeline, over miniature repositories: lightweight and annotated
tags, tags the engine's pattern does not match, an architecture that leaves and comes back (two
release intervals), a tag on a side branch and one on a merge commit (placed by containment, not
by first-parent position), vLLM's previously-supported claims checked against the timeline, and
a source without tags."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.history import (
    last_releases,
    previous_support,
    release_view,
    run_history,
    table_rows,
)
from apron.extractors.commands.releases import (
    NO_TAGS,
    ReleaseTag,
    containment,
    previous_support_checks,
    release_span,
    release_tags,
    tags_containing,
    version_key,
)
from apron.extractors.engines import ENGINES
from apron.extractors.errors import SourceUnreachableError
from apron.extractors.git import GitSource
from apron.extractors.runner.factcache import FactCache
from tests.conftest import commit_tree, git

REGISTRY = "vllm/model_executor/models/registry.py"
A, B, C, D = "LlamaForCausalLM", "MistralForCausalLM", "GemmaForCausalLM", "PhiForCausalLM"


def registry(archs: list[str], previously: dict[str, str] | None = None) -> str:
    """A hand-written registry in the shape of vLLM's, with its previously-supported dict."""
    body = "".join(f'    "{a}": ("{a.lower()}", "{a}"),\n' for a in archs)
    notes = "".join(f'    "{a}": "{v}",\n' for a, v in (previously or {}).items())
    return (
        f"_TEXT_GENERATION_MODELS = {{\n{body}}}\n\n"
        "_VLLM_MODELS = {\n    **_TEXT_GENERATION_MODELS,\n}\n\n"
        f"_PREVIOUSLY_SUPPORTED_MODELS = {{\n{notes}}}\n\n_OOT_SUPPORTED_MODELS = {{}}\n"
    )


# ---------------------------------------------------------------- pure functions


def test_release_tags_match_the_whole_name_and_sort_by_version():
    listed = [
        ("v0.10.0", "c"),
        ("v0.9.1", "b"),
        ("v0.9.0", "a"),
        ("v0.10.0rc1", "x"),  # not a release by vLLM's pattern
        ("nightly", "y"),
        ("xv0.9.0", "z"),
    ]
    tags = release_tags(listed, ENGINES["vllm"].release_tags)
    assert [t.name for t in tags] == ["v0.9.0", "v0.9.1", "v0.10.0"]
    assert [
        t.name for t in release_tags([("b10", "a"), ("b9", "b"), ("master-1", "c")], r"b\d+")
    ] == [
        "b9",
        "b10",
    ]
    sglang = release_tags([("v0.4.1.post2", "a"), ("v0.4.1", "b")], ENGINES["sglang"].release_tags)
    assert [t.name for t in sglang] == ["v0.4.1", "v0.4.1.post2"]
    assert version_key("v0.10.1") == (0, 10, 1) and version_key("0.10.1") == (0, 10, 1)


def test_containment_follows_every_parent():
    # r - a - m ; r - s - m (m merges the side commit s); t is a child of s only
    graph = [("r", ()), ("a", ("r",)), ("s", ("r",)), ("m", ("a", "s")), ("t", ("s",))]
    reach = containment(graph, ["a", "s"])
    assert reach == {"r": 0, "a": 1, "s": 2, "m": 3, "t": 2}
    tags = [ReleaseTag("v1", "t"), ReleaseTag("v2", "m")]
    assert tags_containing(graph, tags, ["a", "s"]) == {"a": (tags[1],), "s": tuple(tags)}


def test_release_span_and_previous_support_checks():
    v1, v2, v3 = ReleaseTag("v1.0.0", "a"), ReleaseTag("v2.0.0", "b"), ReleaseTag("v3.0.0", "c")
    span = release_span([v1, v2, v3], [v3])
    assert (span.first, span.last, span.count) == (v1, v2, 2)
    assert release_span([v3], [v3]).first is None  # appeared and left between two releases
    checks = previous_support_checks(
        {"X": "2.0.0", "Y": "1.0.0", "Z": "1.0.0", "W": "9.0.0"}, {"X": v2, "Y": v2, "Z": None}
    )
    assert [(c.architecture, c.agrees, c.found) for c in checks] == [
        ("X", True, "v2.0.0"),
        ("Y", False, "v2.0.0"),
        ("Z", False, ""),
    ]  # W: the timeline never saw it, so it is not checked


# ---------------------------------------------------------------- a tagged miniature repository


@pytest.fixture
def tagged_repo(make_repo):
    """main: c0 (A B D) - c1 (+C, v0.1.0) - c2 (-B -D, annotated v0.2.0) - c3 (README, tags
    the pattern ignores) - c4 (B back, v0.3.0) - c5 (-C) - m (merge of side, v0.4.0) - c6;
    side: from c4, s1 (README, v0.3.1: has C, never had c5)."""
    claims = {D: "0.2.0", C: "0.3.1"}  # D: the engine's claim disagrees with the timeline
    repo, shas = make_repo(
        [
            ({REGISTRY: registry([A, B, D]), "README.md": "0\n"}, "init", "2025-01-01T00:00:00Z"),
            ({REGISTRY: registry([A, B, C, D])}, "add gemma (#1)", "2025-01-02T00:00:00Z"),
            ({REGISTRY: registry([A, C], {D: "0.2.0"})}, "drop two (#2)", "2025-01-03T00:00:00Z"),
            ({"README.md": "3\n"}, "docs (#3)", "2025-01-04T00:00:00Z"),
            ({REGISTRY: registry([A, B, C], {D: "0.2.0"})}, "B back (#4)", "2025-01-05T00:00:00Z"),
        ]
    )
    c0, c1, c2, c3, c4 = shas
    git(repo, "tag", "v0.1.0", c1)
    git(repo, "tag", "-a", "-m", "release 0.2.0", "v0.2.0", c2)
    git(repo, "tag", "v0.2.0rc1", c3)
    git(repo, "tag", "-a", "-m", "nightly", "nightly-20250104", c3)
    git(repo, "tag", "v0.3.0", c4)
    git(repo, "checkout", "-q", "-b", "side", c4)
    s1 = commit_tree(repo, {"README.md": "side\n"}, "side fix (#5)", "2025-01-06T00:00:00Z")
    git(repo, "tag", "-a", "-m", "0.3.1", "v0.3.1", s1)
    git(repo, "checkout", "-q", "main")
    c5 = commit_tree(
        repo, {REGISTRY: registry([A, B], claims)}, "drop gemma (#6)", "2025-01-07T00:00:00Z"
    )
    dates = {
        "GIT_AUTHOR_DATE": "2025-01-08T00:00:00Z",
        "GIT_COMMITTER_DATE": "2025-01-08T00:00:00Z",
    }
    os.environ.update(dates)
    try:
        git(repo, "merge", "-q", "--no-ff", "-m", "Merge side (#7)", "side")
    finally:
        for key in dates:
            os.environ.pop(key, None)
    merge = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "v0.4.0", merge)
    c6 = commit_tree(repo, {"README.md": "6\n"}, "docs (#8)", "2025-01-09T00:00:00Z")
    return repo, dict(c0=c0, c1=c1, c2=c2, c4=c4, s1=s1, c5=c5, merge=merge, c6=c6)


@pytest.fixture
def sources():
    """Open GitSources, closed when the test ends (each keeps a `git cat-file` process)."""
    opened: list[GitSource] = []
    yield opened
    for source in opened:
        source.close()


def _history(repo, commits, tmp_path, *, opened: list, until="c6"):
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    opened.append(source)
    history = run_history(ENGINES["vllm"], "registry_rows", source, commits["c0"], commits[until])
    return source, history


def _spans(history, view) -> dict[str, list[tuple]]:
    found: dict[str, list[tuple]] = {}
    for n, item in enumerate(history.timeline().items):
        for m, _ in enumerate(item.intervals):
            span = view.spans[(n, m)]
            found.setdefault(item.label, []).append(
                (span.first.name if span.first else None, span.last.name if span.last else None)
            )
    return found


def test_releases_by_containment(tagged_repo, tmp_path, sources):
    repo, commits = tagged_repo
    source, history = _history(repo, commits, tmp_path, opened=sources)
    view = release_view(history, source, ENGINES["vllm"].release_tags)
    assert [t.name for t in view.tags] == ["v0.1.0", "v0.2.0", "v0.3.0", "v0.3.1", "v0.4.0"]
    assert [t.name for t in view.placed] == [t.name for t in view.tags]
    assert view.unplaced == [] and view.older == 0 and not view.notes
    assert next(t for t in view.tags if t.name == "v0.2.0").commit == commits["c2"]  # peeled
    assert _spans(history, view) == {
        A: [("v0.1.0", "v0.4.0")],
        B: [("v0.1.0", "v0.1.0"), ("v0.3.0", "v0.4.0")],  # two runs, two release intervals
        # v0.3.1 sits on a side branch cut before the removal: it had C; the merge tag did not
        C: [("v0.1.0", "v0.3.1")],
        D: [("v0.1.0", "v0.1.0")],
    }
    assert view.in_until == {"v0.1.0", "v0.2.0", "v0.3.0", "v0.3.1", "v0.4.0"}
    rows = {row[0]: row for row in table_rows(history, view)}
    assert rows[A][4] == "v0.1.0 or earlier .. v0.4.0"
    assert rows[C][4] == "v0.1.0 .. v0.3.1"
    body = history.to_json(view)
    gemma = next(i for i in body["items"] if i["key"] == {"architecture": C})
    assert gemma["intervals"][0]["releases"] == {
        "first": "v0.1.0",
        "last": "v0.3.1",
        "count": 4,
        "first_may_be_earlier": False,
        "last_outside_until": False,
    }
    assert body["releases"]["tags_matching"] == 5


def test_a_tag_after_until_is_placed_and_said_to_be_outside(tagged_repo, tmp_path, sources):
    repo, commits = tagged_repo
    with GitSource("vllm", str(repo), cache_dir=tmp_path / "c") as first:
        first.resolve(commits["merge"])  # fetched alone before (depth 1, as `support` does)
        assert commits["merge"] in first.shallow_commits()
    source, history = _history(repo, commits, tmp_path, until="c4", opened=sources)
    view = release_view(history, source, ENGINES["vllm"].release_tags)
    assert not view.notes, view.notes
    assert [t.name for t in view.placed] == ["v0.1.0", "v0.2.0", "v0.3.0", "v0.3.1", "v0.4.0"]
    assert view.in_until == {"v0.1.0", "v0.2.0", "v0.3.0"}
    spans = _spans(history, view)
    # C is still there at --until; the newest release containing its appearance is v0.4.0,
    # whose state the run did not extract: said, not hidden
    assert spans[C] == [("v0.1.0", "v0.4.0")]
    assert view.fetch_requests == 1  # the shallow tag commit got its history, in one request
    (gemma,) = [i for i in history.to_json(view)["items"] if i["key"] == {"architecture": C}]
    assert gemma["intervals"][0]["releases"]["last_outside_until"] is True


def test_previously_supported_claims_against_the_timeline(tagged_repo, tmp_path, sources):
    repo, commits = tagged_repo
    source, history = _history(repo, commits, tmp_path, opened=sources)
    view = release_view(history, source, ENGINES["vllm"].release_tags)
    checks = previous_support(ENGINES["vllm"], history, view, source, FactCache(None))
    assert last_releases(history, view)[D].name == "v0.1.0"
    assert [(c.architecture, c.claimed, c.found, c.agrees) for c in checks] == [
        (C, "0.3.1", "v0.3.1", True),
        (D, "0.2.0", "v0.1.0", False),  # a finding: vLLM says 0.2.0 still had it
    ]


def test_a_source_without_tags_says_so(make_repo, tmp_path, sources):
    repo, shas = make_repo(
        [
            ({REGISTRY: registry([A])}, "init", "2025-01-01T00:00:00Z"),
            ({REGISTRY: registry([A, B])}, "add (#1)", "2025-01-02T00:00:00Z"),
        ]
    )
    git(repo, "tag", "not-a-release", shas[1])
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    sources.append(source)
    history = run_history(ENGINES["vllm"], "registry_rows", source, shas[0], shas[1])
    view = release_view(history, source, ENGINES["vllm"].release_tags)
    assert view.notes == [NO_TAGS] and not view.shown and view.spans == {}
    assert all(len(row) == 5 for row in table_rows(history, view))  # no releases column
    body = history.to_json(view)
    assert body["items"][0]["intervals"][0]["releases"] is None
    assert body["releases"]["notes"] == [NO_TAGS] and body["releases"]["tags_matching"] == 0
    no_pattern = release_view(history, source, None)
    assert no_pattern.notes == ["the engine declares no release tag pattern: releases not shown"]


def test_cli_history_shows_releases(tagged_repo, project, monkeypatch):
    repo, commits = tagged_repo
    monkeypatch.setenv("COLUMNS", "200")  # the table follows the width: headers whole at 200
    runner = CliRunner()
    args = ["history", "--engine", "vllm", "--fact", "registry_rows", "--source", str(repo)]
    args += ["--since", commits["c0"], "--until", commits["c6"], "--root", str(project.root)]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["releases"]["tags_placed"] == ["v0.1.0", "v0.2.0", "v0.3.0", "v0.3.1", "v0.4.0"]
    (phi,) = [c for c in body["previously_supported_check"] if c["architecture"] == D]
    assert phi["agrees"] is False and phi["found"] == "v0.1.0"
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "releases that had it" in text.stdout
    assert "previously supported PhiForCausalLM: the engine says last in 0.2.0" in text.stdout
    assert "1 agree with the timeline's last release, 1 do not" in text.stdout
    bare = runner.invoke(app, [*args, "--no-releases"])
    assert "releases that had it" not in bare.stdout


def test_cli_history_without_tags(make_repo, project):
    repo, shas = make_repo(
        [
            ({REGISTRY: registry([A])}, "init", "2025-01-01T00:00:00Z"),
            ({REGISTRY: registry([A, B])}, "add (#1)", "2025-01-02T00:00:00Z"),
        ]
    )
    result = CliRunner().invoke(
        app,
        [
            "history",
            "--engine",
            "vllm",
            "--fact",
            "registry_rows",
            "--source",
            str(repo),
            "--since",
            shas[0],
            "--until",
            shas[1],
            "--root",
            str(project.root),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.count(NO_TAGS) == 1


def test_tags_that_cannot_be_listed_leave_the_history_alone(
    tagged_repo, tmp_path, monkeypatch, sources
):
    repo, commits = tagged_repo
    source, history = _history(repo, commits, tmp_path, opened=sources)

    def unreachable():
        raise SourceUnreachableError("cannot list the tags of the source (offline)")

    monkeypatch.setattr(source, "tags", unreachable)
    view = release_view(history, source, ENGINES["vllm"].release_tags)
    assert view.notes == ["cannot list the tags of the source (offline): releases not shown"]
    assert not view.shown
