"""The git source layer: batched blob fetches, counted requests, presence checks, history ranges."""

from __future__ import annotations

import subprocess

import pytest

from apron.extractors.errors import MissingPathError, UnknownCommitError
from apron.extractors.git import GitSource, ObjectPresence

MODELS = {f"pkg/models/m{i:03d}.py": f"ARCH = 'Model{i}'\n" for i in range(60)}


def packet_fetches(trace_file) -> int:
    """Fetch connections to the source, from git's packet trace (one capability advertisement
    each; a negotiating fetch may send several `command=fetch` rounds in one connection)."""
    if not trace_file.exists():
        return 0
    return trace_file.read_text(errors="replace").count("fetch< version 2")


@pytest.fixture
def traced(tmp_path, monkeypatch):
    trace = tmp_path / "packets.txt"
    monkeypatch.setenv("GIT_TRACE_PACKET", str(trace))
    return trace


def test_prefetch_reads_many_files_in_two_requests(make_repo, tmp_path, traced):
    repo, shas = make_repo([({**MODELS, "README.md": "x\n"}, "models")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[0])
    paths = snapshot.list_files("pkg/models")
    assert len(paths) == 60
    snapshot.prefetch(paths)
    texts = [snapshot.read_text(p) for p in paths]
    assert texts[7] == "ARCH = 'Model7'\n"
    assert source.fetch_requests == 2  # the commit (trees only), then one batch of 60 blobs
    assert source.fetched_blobs == 60
    assert packet_fetches(traced) == 2  # git agrees: no lazy fetch behind the counter's back
    snapshot.prefetch(paths)  # everything is present: no request
    assert source.fetch_requests == 2


def test_prefetch_of_a_directory_fetches_the_files_directly_in_it(make_repo, tmp_path):
    repo, shas = make_repo([({**MODELS, "pkg/models/sub/deep.py": "x\n", "top.py": "y\n"}, "m")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[0])
    snapshot.prefetch(["pkg/models", "top.py", "not/there"])
    assert source.fetch_requests == 2 and source.fetched_blobs == 61  # not sub/deep.py
    [snapshot.read_text(p) for p in [*MODELS, "top.py"]]
    assert source.fetch_requests == 2


def test_reads_without_prefetch_cost_one_request_each(make_repo, tmp_path, traced):
    repo, shas = make_repo([(MODELS, "models")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[0])
    for path in list(MODELS)[:3]:
        snapshot.read_text(path)
    assert source.fetch_requests == 1 + 3
    assert packet_fetches(traced) == 4


def test_second_snapshot_of_a_cached_commit_fetches_nothing(make_repo, tmp_path, traced):
    repo, shas = make_repo([(MODELS, "models")])
    first = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snap = first.snapshot(shas[0])
    snap.prefetch(MODELS)
    again = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snap = again.snapshot(shas[0])
    snap.prefetch(MODELS)
    assert [snap.read_text(p) for p in MODELS] == list(MODELS.values())
    assert again.fetch_requests == 0
    assert packet_fetches(traced) == 2


def test_presence_matches_git(make_repo, tmp_path):
    repo, shas = make_repo([(MODELS, "one"), ({"pkg/models/m000.py": "ARCH = 'changed'\n"}, "two")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[1])
    wanted = snapshot.blob_shas(list(MODELS)[:10])
    snapshot.prefetch(list(MODELS)[:10])
    presence = ObjectPresence(source.cache_path / "objects")
    listed = subprocess.run(
        [
            "git",
            f"--git-dir={source.cache_path}",
            "cat-file",
            "--batch-check",
            "--batch-all-objects",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    have = {line.split()[0] for line in listed if line}
    assert all(presence.has(sha) for sha in have)
    assert set(wanted) <= have
    other = snapshot.blob_shas(list(MODELS)[10:])
    assert not any(presence.has(sha) for sha in other)
    assert presence.missing(other + other) == other  # de-duplicated, order kept
    assert not presence.has("0" * 40)


def test_missing_blob_at_the_source_is_a_missing_path_error(make_repo, tmp_path):
    repo, shas = make_repo([({"a.py": "x = 1\n"}, "one")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[0])
    sha = snapshot.blob_sha("a.py")
    obj = repo / ".git" / "objects" / sha[:2] / sha[2:]
    obj.unlink()  # the source lost the blob (as the partial mirrors lack their largest blobs)
    with pytest.raises(MissingPathError) as info:
        snapshot.read_text("a.py")
    assert info.value.paths == ("a.py",)
    assert sha in str(info.value)


def test_history_range_and_first_parent_changes(make_repo, tmp_path, traced):
    commits = [({"a.py": "v = 0\n", "b.py": "w = 0\n"}, "root")]
    commits += [({"a.py": f"v = {i}\n"}, f"a{i} (#{100 + i})") for i in range(1, 4)]
    commits += [({"b.py": "w = 1\n"}, "b only"), ({"a.py": "v = 9\n"}, "a9")]
    repo, shas = make_repo(commits)
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    until = source.resolve(shas[-1])
    since = source.resolve(shas[1])
    assert not source.is_ancestor(since.sha, until.sha)  # both shallow, not yet connected
    source.fetch_range(since, until)
    assert source.is_ancestor(since.sha, until.sha)
    changes = source.first_parent_changes(since, until, files=["a.py"])
    log = [c for c, _ in changes]
    assert [c.sha for c in log] == [shas[2], shas[3], shas[5]]
    assert log[0].subject == "a2 (#102)" and log[0].parent == shas[1]
    everything = source.first_parent_changes(since, until, dirs=[""])
    assert [c.sha for c, _ in everything] == shas[2:]
    blobs = {blob for _, changed in changes for path, blob in changed}
    assert len(blobs) == 3 and all(path == "a.py" for _, ch in changes for path, _ in ch)
    requests = source.fetch_requests
    source.fetch_blobs(blobs)
    source.fetch_blobs(blobs)
    assert source.fetch_requests == requests + 1
    snap = source.snapshot_at(log[-1], allow_fetch=False)
    assert snap.read_text("a.py") == "v = 9\n"
    assert source.fetch_requests == requests + 1
    assert packet_fetches(traced) == source.fetch_requests
    source.fetch_range(since, until)  # already connected: no request
    assert source.fetch_requests == requests + 1


def test_history_range_rejects_a_since_that_is_not_an_ancestor(make_repo, tmp_path):
    repo, shas = make_repo([({"a.py": "1\n"}, "one"), ({"a.py": "2\n"}, "two")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    newer, older = source.resolve(shas[1]), source.resolve(shas[0])
    with pytest.raises(UnknownCommitError, match="is not an ancestor"):
        source.fetch_range(newer, older)


def test_resolve_reuses_commits_fetched_with_a_range(make_repo, tmp_path):
    repo, shas = make_repo([({"a.py": f"{i}\n"}, f"c{i}") for i in range(5)])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    source.fetch_range(source.resolve(shas[0]), source.resolve(shas[4]))
    requests = source.fetch_requests
    middle = source.resolve(shas[2])
    assert middle.sha == shas[2] and middle.parent == shas[1]
    assert source.fetch_requests == requests


def _engine_trees():
    from tests import llamacpp_miniatures, sglang_miniatures, trtllm_miniatures, vllm_miniatures

    return [
        ("vllm", vllm_miniatures.tree_v1()),
        ("llamacpp", llamacpp_miniatures.tree_v2()),
        ("sglang", sglang_miniatures.full_tree_2026()),
        ("trtllm", trtllm_miniatures.tree()),
    ]


@pytest.mark.parametrize(
    ("engine", "tree"), _engine_trees(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_each_engine_extracts_a_commit_in_at_most_three_requests(
    engine, tree, make_repo, tmp_path, traced
):
    from apron.extractors.engines import ENGINES
    from apron.extractors.runner.base import extract_engine

    repo, shas = make_repo([({p: t for p, t in tree.items() if t is not None}, "tree")])
    source = GitSource(engine, str(repo), cache_dir=tmp_path / "c")
    facts = extract_engine(ENGINES[engine], source.snapshot(shas[0]), commit_date="x")
    read = {s.path for f in facts.facts for s in f.sources}
    assert len(read) >= 2
    assert source.fetch_requests <= 3, (engine, source.fetch_requests, sorted(read))
    assert packet_fetches(traced) == source.fetch_requests
