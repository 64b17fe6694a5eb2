"""Blobs read in batches from `git cat-file --batch`: answers in order, a missing or oversize
blob in the middle of a batch, and a snapshot that still reports every file the way one-by-one
reads did."""

from __future__ import annotations

import pytest

from apron.extractors.errors import ParseError
from apron.extractors.git import BlobNotPresent, GitSource, ObjectReader, ObjectTooLarge
from apron.extractors.snapshot import RecordingSnapshot

FILES = {f"pkg/m{i}.py": f"ARCH = 'Model{i}'\n" * (i + 1) for i in range(7)}
BIG = "pkg/m5.py"  # 96 bytes: over a limit of 60, as are m3 (64), m4 and m6; m0-m2 are under
MISSING = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def fetched(make_repo, tmp_path):
    """A source whose cache holds the commit and every blob; the snapshot and its blob SHAs."""
    repo, shas = make_repo([(FILES, "files")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[0])
    snapshot.prefetch(list(FILES))
    return source, snapshot, {p: snapshot.blob_sha(p) for p in FILES}


@pytest.mark.parametrize("batch", [1, 2, 3, 256])
def test_read_many_answers_every_blob_whatever_the_batch_size(fetched, monkeypatch, batch):
    source, _, blobs = fetched
    monkeypatch.setattr(ObjectReader, "BATCH", batch)
    asked = [blobs["pkg/m3.py"], blobs["pkg/m0.py"], blobs["pkg/m3.py"], *blobs.values()]
    got = source.reader.read_many(asked)
    assert got == {sha: FILES[p].encode() for p, sha in blobs.items()}
    assert source.reader.read(blobs["pkg/m6.py"]) == ("blob", FILES["pkg/m6.py"].encode())


def test_read_many_leaves_out_a_missing_object_and_skips_an_oversize_one(fetched, monkeypatch):
    source, _, blobs = fetched
    monkeypatch.setattr(ObjectReader, "BATCH", 3)
    shas = list(blobs.values())
    asked = [*shas[:2], MISSING, *shas[2:]]  # the missing one sits in the first batch
    got = source.reader.read_many(asked, max_size=60)
    assert MISSING not in got
    for path, sha in blobs.items():
        size = len(FILES[path])
        if size > 60:
            assert isinstance(got[sha], ObjectTooLarge) and got[sha].args == (size,)
        else:
            assert got[sha] == FILES[path].encode()
    too_large = [p for p in FILES if len(FILES[p]) > 60]
    assert too_large[0] == "pkg/m3.py" and BIG in too_large and "pkg/m6.py" in too_large
    # the stream is still in step: a later single read answers the right object
    assert source.reader.read(shas[0]) == ("blob", FILES["pkg/m0.py"].encode())


def test_read_many_skips_objects_that_are_not_blobs(fetched):
    source, snapshot, blobs = fetched
    tree = snapshot._reader.commit_tree(snapshot.commit)
    got = source.reader.read_many([tree, blobs["pkg/m1.py"]])
    assert got == {blobs["pkg/m1.py"]: FILES["pkg/m1.py"].encode()}


def test_after_prefetch_reads_make_no_round_trip_and_are_all_recorded(fetched, monkeypatch):
    source, snapshot, _ = fetched
    single = []
    original = ObjectReader.read
    monkeypatch.setattr(
        ObjectReader, "read", lambda self, *a, **k: single.append(a) or original(self, *a, **k)
    )
    recording = RecordingSnapshot(snapshot)
    assert [recording.read_text(p) for p in reversed(FILES)] == list(reversed(FILES.values()))
    assert single == []
    assert sorted(recording.read_paths) == sorted(FILES)
    assert [s.path for s in recording.sources()] == sorted(FILES)
    assert snapshot.read_bytes("pkg/m2.py") == FILES["pkg/m2.py"].encode()  # a second read
    assert len(single) == 1


def test_an_oversize_blob_in_a_batch_is_the_same_error_as_a_single_read(
    make_repo, tmp_path, monkeypatch
):
    monkeypatch.setattr("apron.extractors.git.snapshot.MAX_SOURCE_BYTES", 60)
    repo, shas = make_repo([(FILES, "files")])
    batched = GitSource("demo", str(repo), cache_dir=tmp_path / "a").snapshot(shas[0])
    batched.prefetch(list(FILES))
    one_by_one = GitSource("demo", str(repo), cache_dir=tmp_path / "b").snapshot(shas[0])
    assert batched.read_text("pkg/m2.py") == FILES["pkg/m2.py"]
    with pytest.raises(ParseError) as from_batch:
        batched.read_text(BIG)
    with pytest.raises(ParseError) as single:
        one_by_one.read_text(BIG)
    assert str(from_batch.value) == str(single.value)
    assert f"{BIG} is {len(FILES[BIG])} bytes, over the 60-byte limit" in str(single.value)
    assert batched.read_text("pkg/m1.py") == FILES["pkg/m1.py"]


def test_a_blob_absent_in_the_middle_is_still_blob_not_present(make_repo, tmp_path):
    repo, shas = make_repo([(FILES, "files")])
    source = GitSource("demo", str(repo), cache_dir=tmp_path / "c")
    fetching = source.snapshot(shas[0])
    fetching.prefetch([p for p in FILES if p != "pkg/m3.py"])
    snapshot = source.snapshot_at(fetching.resolved, allow_fetch=False)
    requests = source.fetch_requests
    snapshot.prefetch(list(FILES))
    assert snapshot.read_text("pkg/m2.py") == FILES["pkg/m2.py"]
    with pytest.raises(BlobNotPresent):
        snapshot.read_text("pkg/m3.py")
    assert snapshot.read_text("pkg/m4.py") == FILES["pkg/m4.py"]
    assert source.fetch_requests == requests  # this snapshot may not fetch, not even in a batch
