"""What the source layer says about bad input: hex-looking tags and branches passed as commits,
ambiguous prefixes, a directory that is not a repository, an empty source, and a damaged cache
(git's own config, the fact cache's database and rows)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import AbbreviatedCommitError, SourceUnreachableError, UsageError
from apron.extractors.git import GitSource, cache_root
from apron.extractors.runner.factcache import DB_NAME
from tests.conftest import git, mirror, write_pin
from tests.vllm_miniatures import tree_v1

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
runner = CliRunner()


def loose_commit_with_prefix(repo, tree: str, prefix: str) -> str:
    """Write an (unreferenced) commit object whose SHA starts with `prefix`."""
    for i in range(8_000_000):  # a 5-hex prefix needs ~1M tries on average
        body = (
            f"tree {tree}\nauthor t <t@example.invalid> 1700000000 +0000\n"
            f"committer t <t@example.invalid> 1700000000 +0000\n\nfiller {i}\n"
        ).encode()
        if hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest().startswith(prefix):
            done = subprocess.run(
                ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
                input=body,
                capture_output=True,
                check=True,
            )
            return done.stdout.decode().strip()
    raise AssertionError("no commit found")


def loose_blob_with_prefix(repo, prefix: str) -> str:
    for i in range(8_000_000):  # a 5-hex prefix needs ~1M tries on average
        body = f"blob filler {i}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest().startswith(prefix):
            done = subprocess.run(
                ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                input=body,
                capture_output=True,
                check=True,
            )
            return done.stdout.decode().strip()
    raise AssertionError("no blob found")


@pytest.fixture
def tagged(make_repo, tmp_path):
    repo, shas = make_repo([(tree_v1(), "v1"), ({"README.md": "two\n"}, "v2")])
    git(repo, "tag", "b9402", shas[0])
    git(repo, "tag", "-a", "-m", "release", "b9403", shas[1])
    git(repo, "branch", "cafe1", shas[0])
    git(repo, "tag", shas[1][:5], shas[0])  # a tag named like the prefix of another commit
    return repo, shas


def source(repo, tmp_path) -> GitSource:
    return GitSource("vllm", str(repo), cache_dir=tmp_path / "c")


@pytest.mark.parametrize(
    ("name", "kind"), [("b9402", "tag"), ("b9403", "tag"), ("cafe1", "branch")]
)
def test_a_ref_passed_as_a_commit_is_refused(tagged, tmp_path, name, kind):
    repo, shas = tagged
    with source(repo, tmp_path) as git_source, pytest.raises(AbbreviatedCommitError) as info:
        git_source.resolve(name)
    assert info.value.message == (
        f"{name} is a {kind}, not a commit: pass the full SHA, or use `bump --to {name}`"
    )
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").glob("*.git"))


def test_a_tag_that_is_also_a_commit_prefix_is_refused_and_both_are_named(tagged, tmp_path):
    repo, shas = tagged
    with source(repo, tmp_path) as git_source, pytest.raises(AbbreviatedCommitError) as info:
        git_source.resolve(shas[1][:5])
    assert info.value.message.startswith(f"{shas[1][:5]} is a tag, not a commit")
    assert f"it is also the prefix of commit {shas[1]}" in info.value.message


def test_a_prefix_resolves_among_commits_only(tagged, tmp_path):
    repo, shas = tagged
    prefix = shas[0][:5]
    loose_blob_with_prefix(repo, prefix)
    tree = git(repo, "rev-parse", f"{shas[0]}^{{tree}}")
    with source(repo, tmp_path) as git_source:
        assert git_source.resolve(prefix).sha == shas[0]
        other = loose_commit_with_prefix(repo, tree, prefix)
        with pytest.raises(AbbreviatedCommitError) as info:
            git_source.resolve(prefix)
    assert info.value.message == (
        f"abbreviated commit {prefix} is ambiguous: it is the prefix of 2 commits: "
        f"{', '.join(sorted([shas[0], other]))}; give more digits or the full 40-hex SHA"
    )


def test_the_cli_says_a_tag_is_a_tag(project, tagged):
    repo, shas = tagged
    write_pin(project, "vllm", URL, shas[0])
    result = runner.invoke(
        app,
        [
            "--engine",
            "vllm",
            "--commit",
            "b9402",
            "--source",
            str(repo),
            "--root",
            str(project.root),
        ],
    )
    assert result.exit_code == 2
    assert "b9402 is a tag, not a commit: pass the full SHA, or use `bump --to b9402`" in (
        result.output
    )


@pytest.mark.real_mirror
def test_hex_looking_tags_of_the_real_llamacpp_mirror(tmp_path):
    path = mirror("llamacpp")
    if not path:
        pytest.skip("APRON_MIRROR_LLAMACPP is not set")
    with GitSource("llamacpp", path, cache_dir=tmp_path / "c") as git_source:
        with pytest.raises(AbbreviatedCommitError, match="^b9402 is a tag, not a commit"):
            git_source.resolve("b9402")
        with pytest.raises(AbbreviatedCommitError) as both:
            git_source.resolve("b1151")
        with pytest.raises(AbbreviatedCommitError) as ambiguous:
            git_source.resolve("01d8e")
        assert not list((tmp_path / "c").glob("*.git"))  # nothing fetched, no cache created
        # b115 is the prefix of one commit and of one blob: it names the commit
        assert git_source.resolve("b115").sha == "b115105f05e3372bc75b2a486c1930c365fd2846"
    assert "is a tag, not a commit" in both.value.message
    assert "also the prefix of commit b115105f05e3372bc75b2a486c1930c365fd2846" in (
        both.value.message
    )
    assert "abbreviated commit 01d8e is ambiguous: it is the prefix of" in ambiguous.value.message


# ------------------------------------------------------------------ the source itself


def test_a_directory_that_is_not_a_repository(project, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "README.md").write_text("no git here\n")
    write_pin(project, "vllm", URL, "a" * 40)
    with pytest.raises(SourceUnreachableError) as info:
        run(VLLM, project, commit=None, source=str(plain))
    assert info.value.message == f"not a git repository: {plain}"
    assert not list(cache_root().glob("*.git"))  # no empty cache repository left behind


def test_a_subdirectory_of_a_checkout_is_not_a_repository(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, shas[0])
    with pytest.raises(SourceUnreachableError, match="^not a git repository: .*/engine/vllm\n"):
        run(VLLM, project, commit=None, source=str(repo / "vllm"))


def test_an_unknown_commit_leaves_no_cache_repository(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, "b" * 40)
    with pytest.raises(Exception, match="commit not found|not a commit"):
        run(VLLM, project, commit=None, source=str(repo))
    assert not list(cache_root().glob("*.git"))


def test_an_empty_source_is_refused(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, shas[0])
    with pytest.raises(UsageError, match="source '' is not a valid URL or path"):
        run(VLLM, project, commit=None, source="")
    result = runner.invoke(app, ["--engine", "vllm", "--source", "", "--root", str(project.root)])
    assert result.exit_code == 2 and "source '' is not a valid URL or path" in result.output


def test_check_with_a_source_needs_an_engine(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    result = runner.invoke(app, ["check", "--source", str(repo), "--root", str(project.root)])
    assert result.exit_code == 2
    assert "--source names one engine's repository: pass --engine with it" in result.output


# ------------------------------------------------------------------ damaged caches


@pytest.fixture
def warm(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, shas[0])
    first = run(VLLM, project, commit=None, source=str(repo), write=False)
    return project, repo, first


def rerun(project, repo):
    result = run(VLLM, project, commit=None, source=str(repo), write=False)
    assert len(result.facts.fact("registry_rows").records) == 10
    return result


def test_a_garbage_git_config_is_rebuilt_with_one_note(warm):
    project, repo, _ = warm
    [cache] = cache_root().glob("vllm-*.git")
    (cache / "config").write_bytes(b"\x00\xff[[[ not a config = = =\n")
    result = rerun(project, repo)
    assert len(result.notices) == 1, result.notices
    assert str(cache / "config") in result.notices[0] and "rebuilt it" in result.notices[0]
    assert rerun(project, repo).notices == ()


def _damage_rows(change) -> None:
    db = sqlite3.connect(cache_root() / DB_NAME)
    rows = db.execute("SELECT h, kind, data FROM nodes WHERE kind = 1").fetchall()
    for h, _, data in rows:
        db.execute("UPDATE nodes SET data = ? WHERE h = ?", (change(data), h))
    db.commit()
    db.close()


@pytest.mark.parametrize(
    "damage",
    [
        "random bytes in the file",
        "bad zlib",
        "bad json",
        "wrong record schema",
        "wrong payload shape",
    ],
)
def test_fact_cache_damage_is_rebuilt_with_one_note(warm, damage):
    project, repo, first = warm
    path = cache_root() / DB_NAME
    if damage == "random bytes in the file":
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        data = bytearray(path.read_bytes())
        for at in range(100, len(data), 97):
            data[at] = (data[at] * 7 + 13) % 256
        path.write_bytes(bytes(data))
    elif damage == "bad zlib":
        _damage_rows(lambda data: b"\x78\x9c not zlib at all")
    elif damage == "bad json":
        _damage_rows(lambda data: zlib.compress(b"{not json"))
    elif damage == "wrong record schema":
        _damage_rows(
            lambda data: zlib.compress(b'{"records": [{"no_such_field": 1}], "warnings": []}')
        )
    else:
        _damage_rows(lambda data: zlib.compress(b"[1, 2, 3]"))
    result = rerun(project, repo)
    assert result.facts == first.facts
    assert len(result.notices) == 1, result.notices
    assert str(path) in result.notices[0] and "rebuilt" in result.notices[0]
    assert rerun(project, repo).notices == ()


def test_bump_to_a_hex_looking_tag_takes_the_tag(project, tagged):
    """What the tag error suggests works: an annotated tag is peeled to its commit."""
    repo, shas = tagged
    write_pin(project, "vllm", URL, shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    result = runner.invoke(
        app,
        ["bump", "--engine", "vllm", "--to", "b9403", "--source", str(repo)]
        + ["--root", str(project.root)],
    )
    assert result.exit_code in (0, 3), result.output
    if result.exit_code == 0:
        assert shas[1] in (project.pins / "vllm.toml").read_text()
    else:
        assert f"and {shas[1]}; no files written" in result.output


def test_a_failed_fetch_keeps_gits_own_words_and_chains_them(project, tmp_path):
    from apron.extractors.errors import SourceError
    from apron.extractors.git import GitFailed

    write_pin(project, "vllm", URL, "a" * 40)
    with pytest.raises(SourceError) as info:
        run(VLLM, project, commit=None, source="https://127.0.0.1:9/vllm.git")
    assert "fatal: unable to access 'https://127.0.0.1:9/vllm.git/'" in info.value.message
    cause = info.value.__cause__
    assert isinstance(cause, GitFailed) and "unable to access" in cause.stderr
    assert cause.argv[-1] == "a" * 40 and "fetch" in cause.argv
    assert not list(cache_root().glob("*.git"))


def _cat_file_children() -> list[str]:
    """`git cat-file` processes whose parent is this test process."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and "cat-file" in cmdline:
            found.append(cmdline)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_every_run_closes_its_source(warm):
    project, repo, _ = warm
    rerun(project, repo)
    assert _cat_file_children() == []
    with GitSource("vllm", str(repo)) as git_source:
        git_source.snapshot(git_source.resolve(git(repo, "rev-parse", "HEAD")).sha)
        assert len(_cat_file_children()) == 1
    assert _cat_file_children() == []


@pytest.mark.parametrize("damage", ["packed-refs", "a loose ref", "HEAD"])
def test_damaged_refs_of_the_git_cache_are_rebuilt_with_one_note(warm, damage):
    project, repo, _ = warm
    [cache] = cache_root().glob("vllm-*.git")
    if damage == "packed-refs":
        (cache / "packed-refs").write_text("garbage\n")
    elif damage == "a loose ref":
        [ref] = (cache / "refs" / "apron").iterdir()
        ref.write_text("garbage\n")
    else:
        (cache / "HEAD").write_text("garbage\n")
    result = rerun(project, repo)
    assert len(result.notices) == 1, result.notices
    assert result.notices[0].startswith(f"the git cache at {cache} was damaged")
    assert "rebuilt it" in result.notices[0]
    assert rerun(project, repo).notices == ()
