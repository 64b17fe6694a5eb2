"""The one place an input file is opened and read (config.json, adapter_config.json, a safetensors
index or header, a quantization config, a GGUF header, a pin file, a Hugging Face cache ref):
regular files only (a FIFO, a device, a socket, a directory, or a symlink to one, is refused
before it is opened and again on the open descriptor), opened without blocking, its size checked
against a cap before a byte is read, and the cap named in the message. Errors are
ApronInputError, each naming the file (escaped and cut: apron.terminal.shown)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from apron.errors import ApronInputError
from apron.terminal import shown

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def present(path: str | Path) -> bool:
    """Whether anything is at `path` (a dangling symlink or a FIFO counts): what decides that an
    optional input is there, so a FIFO or a broken link is refused by the reader, never taken
    for an absent file."""
    return os.path.lexists(path)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse_irregular(path: str | Path, mode: int, what: str) -> None:
    if not stat.S_ISREG(mode):
        raise ApronInputError(
            f"{shown(path)} is not a regular file ({_kind(mode)}); expected {what}"
        )


def _cannot(path: str | Path, err: OSError) -> ApronInputError:
    return ApronInputError(f"cannot read {shown(path)}: {err.strerror or err}")


@contextmanager
def open_input(path: str | Path, what: str) -> Iterator[BinaryIO]:
    """`path` open for binary reading, refused unless it is a regular file (checked before the
    open, and on the descriptor, which is opened non-blocking so a FIFO swapped in between
    cannot hang it). `what` completes "expected ...": "a Hugging Face config.json"."""
    try:
        _refuse_irregular(path, os.stat(path).st_mode, what)
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        raise _cannot(path, err) from err
    handle = os.fdopen(fd, "rb")
    with handle:
        try:
            _refuse_irregular(path, os.fstat(handle.fileno()).st_mode, what)
        except OSError as err:
            raise _cannot(path, err) from err
        yield handle


def file_size(handle: BinaryIO) -> int:
    """The size of an open input file, in bytes."""
    return os.fstat(handle.fileno()).st_size


def too_large(path: str | Path, size: int, cap: int, what: str) -> ApronInputError:
    """The one message for a file over its cap."""
    return ApronInputError(f"{shown(path)} is {size:,} B; apron reads at most {cap:,} B for {what}")


def read_input(path: str | Path, cap: int, what: str) -> bytes:
    """The bytes of `path`: a regular file of at most `cap` bytes (refused before reading when
    larger, and if it grows while read)."""
    try:
        with open_input(path, what) as handle:
            size = file_size(handle)
            if size > cap:
                raise too_large(path, size, cap, what)
            data = handle.read(cap + 1)
    except OSError as err:
        raise _cannot(path, err) from err
    if len(data) > cap:
        raise too_large(path, len(data), cap, what)
    return data


def read_input_text(path: str | Path, cap: int, what: str) -> str:
    """`read_input` decoded as UTF-8; text that is not UTF-8 is refused naming the file."""
    data = read_input(path, cap, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ApronInputError(
            f"{shown(path)} is not UTF-8 text (byte {err.start:,}); expected {what}"
        ) from err


class CappedReader:
    """Reads a file front to back through a small moving buffer, at most `cap` bytes in all (a
    GGUF header is read this way: its file may be many GB, its header may not). `need(n)` makes
    the next n bytes available in `buffer` from `position` (for struct.unpack_from over long
    runs of small fields; it may move what is buffered, so read both after it); `take(n)`
    returns them and moves on. Asking past the cap or past the end of the file is
    ApronInputError naming the file."""

    CHUNK = 1 << 20

    def __init__(self, handle: BinaryIO, path: str | Path, cap: int, what: str) -> None:
        self.handle, self.path, self.cap, self.what = handle, path, cap, what
        self.buffer = bytearray()
        self.position = 0  # in buffer
        self.base = 0  # the file offset of buffer[0]
        self.size = file_size(handle)

    @property
    def offset(self) -> int:
        """The file offset of the next byte."""
        return self.base + self.position

    @property
    def remaining(self) -> int:
        """Bytes left in the file after the offset (what llama.cpp's gguf_reader checks each
        count and length against)."""
        return max(0, self.size - self.offset)

    def need(self, n: int) -> None:
        if self.position + n <= len(self.buffer):
            return
        if self.offset + n > self.cap:
            raise ApronInputError(
                f"{shown(self.path)}: {self.what} runs past {self.cap:,} B, the most apron "
                "reads of it"
            )
        if self.position:  # drop what was read: the buffer holds at most a chunk and n
            del self.buffer[: self.position]
            self.base += self.position
            self.position = 0
        want = min(max(n - len(self.buffer), self.CHUNK), self.cap - self.base - len(self.buffer))
        try:
            data = self.handle.read(want)
        except OSError as err:
            raise _cannot(self.path, err) from err
        self.buffer += data
        if n > len(self.buffer):
            raise ApronInputError(
                f"{shown(self.path)}: {self.what} ends early at byte "
                f"{self.base + len(self.buffer):,} (truncated file?)"
            )

    def skip(self, n: int) -> None:
        """Move past n bytes, a chunk at a time (nothing kept, nothing copied)."""
        while n > 0:
            step = min(n, self.CHUNK)
            self.need(step)
            self.position += step
            n -= step

    def take(self, n: int) -> bytes:
        self.need(n)
        start = self.position
        self.position += n
        return bytes(self.buffer[start : self.position])
