"""A fork server for the kill tests: one child Python imports the extractor once, then forks a
fresh grandchild per run, which runs the real command and can be SIGKILLed for real; a run costs
a fork, not a Python start (imports were ~1-3 s of each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

# The server reads one JSON request a line: {"job": "extract" | "write", "env": {...},
# "output": path, ...}. For each it forks; the grandchild takes the request's environment,
# sends its stdout and stderr to `output`, does the job and leaves with os._exit (no cleanup
# of the server's state, which it shares by fork). The server answers with the grandchild's
# exit code, negative for a signal, as os.waitstatus_to_exitcode gives it ("timeout" when the
# request's timeout passed: the grandchild is killed).
# Jobs: "extract" runs the extract command line with `args`; its writer's step hook counts the
# steps into APRON_STEP_LOG and at step APRON_KILL_AT kills its own process with SIGKILL.
# "writers" forks `orders` concurrent writers of generated/ (each writes the facts it is given
# `rounds` times, in its order), extracted once in the server at the request's commits, and
# answers with their exit codes.
SERVER = r"""
import json, os, signal, sys, time, traceback
from pathlib import Path
from apron.extractors.runner import writer
from apron.extractors.commands.cli import main
from apron.extractors.engines import ENGINES
from apron.extractors.pins import Pin
from apron.extractors.runner.pipeline import ProjectPaths, extract_at, write_generated

def become(request):
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((1, request["output"]), (2, request.get("errors") or request["output"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)

def extract(request):
    kill_at = int(os.environ.get("APRON_KILL_AT", "0"))
    count = 0
    def step(what):
        nonlocal count
        count += 1
        with open(os.environ["APRON_STEP_LOG"], "a") as log:
            log.write(what + "\n")
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    writer._step_done = step
    sys.argv = ["extract", *request["args"]]
    main()

def write(paths, facts, url):
    for done in facts:
        write_generated(paths, done, Pin(url=url, commit=done.commit, date=done.commit_date))

def in_grandchild(job):
    try:
        job()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

def fork(request, job):
    pid = os.fork()
    if pid == 0:
        become(request)
        in_grandchild(job)
    return pid

def exit_code(pid, timeout=None):
    if timeout is None:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "timeout"

for line in sys.stdin:
    request = json.loads(line)
    if request["job"] == "extract":
        answer = exit_code(fork(request, lambda: extract(request)), request.get("timeout"))
    else:
        url = request["url"]
        paths = ProjectPaths(Path(request["root"]))
        engine = ENGINES[request["engine"]]
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(request["env"])
        by_commit = {
            c: extract_at(engine, c, request["repo"], upstream_url=url)
            for c in dict.fromkeys(c for order in request["orders"] for c in order)
        }
        os.environ.clear()
        os.environ.update(saved)
        pids = [
            fork(request, lambda order=order: write(
                paths, [by_commit[order[r % len(order)]] for r in range(request["rounds"])], url
            ))
            for order in request["orders"]
        ]
        answer = [exit_code(pid) for pid in pids]
    print(json.dumps(answer), flush=True)
"""


class ForkServer:
    """The running server: `extract(args, env, output)` and `writers(...)` return exit codes."""

    def __init__(self) -> None:
        # HF_HUB_OFFLINE as every test has it (conftest): huggingface_hub reads it at import
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, request: dict) -> int | list[int]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, f"the fork server died (exit {self.process.poll()})"
        return json.loads(answer)

    def extract(
        self,
        args: list[str],
        env: dict[str, str],
        output: Path,
        *,
        errors: Path | None = None,
        timeout: float | None = None,
    ) -> int:
        """Run `extract ARGS` in a fresh fork with `env`; its stdout goes to `output`, its stderr
        to `errors` (or `output`). TimeoutError when it runs longer than `timeout` seconds (it
        is killed)."""
        code = self.ask(
            {
                "job": "extract",
                "args": args,
                "env": env,
                "output": str(output),
                "errors": str(errors or output),
                "timeout": timeout,
            }
        )
        if code == "timeout":
            raise TimeoutError(f"extract {' '.join(args)} ran longer than {timeout} s")
        return code

    def writers(
        self,
        *,
        engine: str,
        url: str,
        repo: Path,
        root: Path,
        orders: list[list[str]],
        rounds: int,
        output: Path,
    ) -> list[int]:
        """Extract each commit once, then fork one concurrent writer per order, each writing
        generated/ `rounds` times (round r writes order[r % len(order)]); their exit codes."""
        return self.ask(
            {
                "job": "writers",
                "engine": engine,
                "url": url,
                "repo": str(repo),
                "root": str(root),
                "orders": orders,
                "rounds": rounds,
                "env": dict(os.environ),
                "output": str(output),
            }
        )

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
