"""apron.input_files, the one reader: regular files only (checked before the open and on the
descriptor, opened without blocking), a cap checked before a byte is read and named in the
message, text that must be UTF-8; and CappedReader, which reads a header front to back."""

from __future__ import annotations

import os

import pytest

from apron.errors import ApronInputError
from apron.input_files import CappedReader, present, read_input, read_input_text


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: os.mkfifo(p), "is not a regular file (a FIFO); expected a thing"),
        (lambda p: p.mkdir(), "is not a regular file (a directory); expected a thing"),
        (lambda p: p.symlink_to("/dev/zero"), "is not a regular file (a character device)"),
        (lambda p: p.symlink_to(p.parent / "nowhere"), "cannot read"),
    ],
)
def test_only_regular_files_are_read(tmp_path, make, words):
    path = tmp_path / "x"
    make(path)
    assert present(path)
    with pytest.raises(ApronInputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_input(path, 100, "a thing")


def test_the_cap_is_checked_before_reading_and_named(tmp_path):
    path = tmp_path / "big"
    with path.open("wb") as handle:
        handle.truncate(3_000_000_000)  # sparse: never read
    with pytest.raises(ApronInputError, match="is 3,000,000,000 B; apron reads at most 1,024 B"):
        read_input(path, 1024, "a ref")


def test_at_the_cap_is_read(tmp_path):
    (tmp_path / "x").write_bytes(b"a" * 1024)
    assert read_input(tmp_path / "x", 1024, "a ref") == b"a" * 1024


def test_text_must_be_utf8(tmp_path):
    (tmp_path / "x").write_bytes(b"ok\xff")
    with pytest.raises(ApronInputError, match=r"is not UTF-8 text \(byte 2\); expected a pin"):
        read_input_text(tmp_path / "x", 100, "a pin")


def test_nothing_there_is_not_present(tmp_path):
    assert not present(tmp_path / "none")


def test_capped_reader_reads_front_to_back(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(bytes(range(200)) * 20_000)  # 4 MB: over a chunk
    with path.open("rb") as handle:
        reader = CappedReader(handle, path, 4_000_000, "the header")
        assert reader.take(3) == b"\x00\x01\x02"
        reader.take(2_000_000)
        assert reader.offset == 2_000_003 and reader.remaining == 2_000_000 - 3
        assert len(reader.buffer) <= CappedReader.CHUNK + 2_000_000
        with pytest.raises(ApronInputError, match="runs past 4,000,000 B"):
            reader.take(2_000_000)
        reader.take(1_999_997)
        assert reader.remaining == 0
    with path.open("rb") as handle:
        reader = CappedReader(handle, path, 10**9, "the header")
        with pytest.raises(ApronInputError, match="ends early at byte 4,000,000"):
            reader.take(4_000_001)
