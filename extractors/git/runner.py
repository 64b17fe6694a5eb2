"""The one way this project runs git: an argv list, no shell, git's stderr kept on failure."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

# No prompt for credentials, ever: a source that needs them fails with git's own message. Only
# the transports the sources use: a local path or file:// URL, https, and ssh for a URL that
# asks for it (never ext::, fd:: or plain http).
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_ALLOW_PROTOCOL": "file:https:ssh",
}
# Every other GIT_* variable of the caller's environment is dropped: GIT_DIR, GIT_WORK_TREE,
# GIT_CONFIG_*, GIT_EXEC_PATH, GIT_SSH_COMMAND, GIT_PROXY_COMMAND, ... would redirect git to
# another repository, configuration or program. Tracing is kept (it only writes a log).
KEPT_GIT_PREFIXES = ("GIT_TRACE",)


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
        """The line of git's stderr that names the cause: its first `fatal:` or `error:` line
        (git puts hints after it, e.g. the `safe.directory` command after "detected dubious
        ownership"), else its last line, else the exit status."""
        lines = [line.strip() for line in self.stderr.strip().splitlines() if line.strip()]
        causes = [line for line in lines if line.startswith(("fatal:", "error:"))]
        if causes:
            return causes[0]
        return lines[-1] if lines else f"exit status {self.returncode}"


def git_env(**extra: str) -> dict[str, str]:
    """The environment git runs in: the caller's, without the variables that redirect git."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") or name.startswith(KEPT_GIT_PREFIXES)
    }
    return {**inherited, **GIT_ENV, **extra}


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
