"""The one place an output path is checked, before any work: a regular file to replace or a new
name, in an existing folder where a file can be created (tried, not guessed: /proc, a read-only
mount and a missing folder fail here), never a directory, a FIFO or a device; a symlink is
refused unless the caller asked to follow it (then its target is checked and written). The
file is then written whole by rename (`write_output`), so a failed or interrupted write leaves
the old one."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from apron.errors import ApronInputError
from apron.record import Record
from apron.terminal import shown


class OutputFile(Record):
    """A checked output: where the file goes, and the empty temp file beside it that becomes it."""

    path: Path  # the symlink's target when following was asked
    temp: Path
    option: str
    mode: int  # the permissions the file gets: the replaced file's, else 0o666 less the umask


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def said(option: str, path: str | Path, problem: str) -> str:
    """'--out kv.png is a directory, not a file' / '--out a/b.png: the folder a does not exist'."""
    joint = " " if problem.startswith("is ") else ": "
    return f"{option} {shown(path)}{joint}{problem}"


def _refuse(option: str, path: str | Path, why: str) -> ApronInputError:
    return ApronInputError(said(option, path, why))


def output_problem(path: str | Path, *, follow_symlinks: bool = False) -> tuple[str, Path]:
    """(why `path` cannot be an output, or "", and the file that would be written): the checks
    that need no write (a symlink not asked to be followed, a directory, a FIFO or device, a
    missing folder, a name the system refuses); shared with `extract bump`'s outputs."""
    try:
        return _problem(Path(path), str(path), follow_symlinks)
    except (OSError, ValueError) as err:  # a name too long, a NUL byte
        return f"cannot be checked: {getattr(err, 'strerror', None) or err}", Path(path)


def _problem(given: Path, text: str, follow_symlinks: bool) -> tuple[str, Path]:
    if not text:
        return "an empty path", given
    target = given
    if given.is_symlink():
        if not follow_symlinks:
            return "is a symlink; apron does not write through a symlink unless asked", given
        target = Path(os.path.realpath(given))
    mode = os.stat(target).st_mode if os.path.lexists(target) else None
    if mode is not None and stat.S_ISDIR(mode):
        return "is a directory, not a file", target
    if mode is not None and not stat.S_ISREG(mode):
        return "is not a regular file (a FIFO, a device or a socket)", target
    if not target.parent.is_dir():
        return f"the folder {shown(target.parent)} does not exist", target
    return "", target


def check_output(path: str | Path, option: str, *, follow_symlinks: bool = False) -> OutputFile:
    """`path` checked as an output (see the module); ApronInputError naming the option and why.
    The temp file it creates is removed by `discard` when the work fails."""
    problem, target = output_problem(path, follow_symlinks=follow_symlinks)
    if problem.startswith("is a symlink"):
        problem += " (--follow-symlinks)"
    if problem:
        raise _refuse(option, path, problem)
    folder = target.parent
    try:
        handle, temp = tempfile.mkstemp(dir=folder, prefix=f".{target.name[:64]}.", suffix=".tmp")
    except OSError as err:
        raise _refuse(
            option, path, f"cannot write in {shown(folder)}: {err.strerror or err}"
        ) from err
    os.close(handle)
    mode = os.stat(target).st_mode if target.exists() else None
    keep = stat.S_IMODE(mode) if mode is not None else _new_file_mode()
    return OutputFile(target, Path(temp), option, keep)


def discard(output: OutputFile) -> None:
    """Remove the temp file of an output that will not be written."""
    output.temp.unlink(missing_ok=True)


def write_output(output: OutputFile, write: Callable[[BinaryIO], None]) -> Path:
    """Run `write` on the temp file, then rename it onto the output; the temp file is removed
    when anything fails (ApronInputError for an OSError, naming the option)."""
    try:
        with open(output.temp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(output.temp, output.mode)
        os.replace(output.temp, output.path)
    except OSError as err:
        discard(output)
        raise _refuse(
            output.option, output.path, f"cannot be written: {err.strerror or err}"
        ) from err
    except BaseException:
        discard(output)
        raise
    return output.path
