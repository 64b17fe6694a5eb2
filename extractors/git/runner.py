"""The one way this project runs git: an argv list, no shell, git's stderr kept on failure."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

# No prompt for credentials, ever: a source that needs them fails with git's own message.
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}


class GitFailed(Exception):
    """A git command exited nonzero or could not start; `stderr` is what git said. Internal:
    the source layer maps it to an ExtractionError, chained `from` it."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = tuple(args)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"git {' '.join(self.argv[:4])} exited {returncode}: {self.last_line}")

    @property
    def last_line(self) -> str:
        """git's last line of stderr (its `fatal:` or `error:` line), or the exit status."""
        lines = [line.strip() for line in self.stderr.strip().splitlines() if line.strip()]
        return lines[-1] if lines else f"exit status {self.returncode}"


def git_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **GIT_ENV, **extra}


def run_git(
    *args: str,
    git_dir: Path | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run `git [--git-dir=DIR] ARGS...` and return its stdout; GitFailed when it fails.

    With `git_dir`, git never searches upward for a repository, so a path that is not one is
    reported as such instead of finding an enclosing checkout."""
    argv = ["git", *((f"--git-dir={git_dir}",) if git_dir is not None else ()), *args]
    try:
        proc = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env or git_env(),
            check=False,
        )
    except OSError as err:
        raise GitFailed(argv[1:], -1, f"cannot run git: {err}") from err
    if proc.returncode != 0:
        raise GitFailed(argv[1:], proc.returncode, proc.stderr)
    return proc.stdout
