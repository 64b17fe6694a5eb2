"""Engine code is parsed, never run: trees whose every file would leave a marker, open a socket
or loop forever if imported extract to the same facts as the clean trees, and nothing happens.
A scan of the extractors package finds no import-style loader, exec, eval or compile outside
one allowlisted function that loads our own generated modules."""

from __future__ import annotations

import ast
import signal
import socket
from pathlib import Path

import pytest

from extractors import render
from tests.conftest import REPO_ROOT
from tests.hostile.helpers import clean_tree, extract_repo
from tests.hostile.hostile_trees import hostile_tree

ENGINES = ["vllm", "llamacpp", "sglang", "trtllm"]
WATCHDOG_SECONDS = 120  # an executed `while True: pass` fails the test instead of hanging it


@pytest.fixture
def listener():
    """A local TCP port the payloads try to connect to; nothing may ever connect."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture
def watchdog():
    def expired(signum, frame):
        raise AssertionError(f"extraction still running after {WATCHDOG_SECONDS}s: did it run "
                             "the payload's endless loop?")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(WATCHDOG_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def assert_never_connected(server: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        connection, peer = server.accept()
        connection.close()
        raise AssertionError(f"something connected to the payload port from {peer}")


@pytest.mark.parametrize("engine", ENGINES)
def test_hostile_tree_extracts_like_the_clean_tree_and_runs_nothing(
        project, make_repo, tmp_path, listener, watchdog, monkeypatch, engine):
    marker = tmp_path / "EXECUTED"
    port = listener.getsockname()[1]
    loaded: list[Path] = []
    real_load = render._load_module
    monkeypatch.setattr(render, "_load_module",
                        lambda path, name: loaded.append(Path(path)) or real_load(path, name))
    repo, shas = make_repo([
        (clean_tree(engine), "clean miniature"),
        (hostile_tree(engine, marker, port), "every file carries a payload"),
    ])
    clean = extract_repo(project, repo, engine, shas[0])
    hostile = extract_repo(project, repo, engine, shas[1])

    assert not marker.exists(), marker.read_text()
    assert_never_connected(listener)
    for fact_clean, fact_hostile in zip(clean.facts.facts, hostile.facts.facts, strict=True):
        assert fact_hostile.records == fact_clean.records, fact_clean.kind.name
    assert hostile.facts.warnings == clean.facts.warnings
    # the only modules ever loaded are our own generated files, read back for the diff
    assert loaded and all(p.resolve().is_relative_to(project.generated.resolve()) for p in loaded)
    generated = "".join(p.read_text() for p in (project.generated / engine).glob("*.py"))
    assert "_hostile" not in generated and str(marker) not in generated


# ------------------------------------------------------------------ static scan of extractors/

# Calls that run code or load a module from a path or a name.
FORBIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "execfile", "breakpoint"}
# Attributes (or names imported from a module) that load or run code.
FORBIDDEN_NAMES = {
    "import_module", "find_spec", "spec_from_file_location", "spec_from_loader",
    "module_from_spec", "exec_module", "load_module", "load_source", "SourceFileLoader",
    "SourcelessFileLoader", "ExtensionFileLoader", "run_path", "run_module", "system", "popen",
    "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv",
    "spawnve", "spawnl", "spawnle", "startfile", "loads", "load",
}
# Modules whose only use would be to run or unpickle something.
FORBIDDEN_MODULES = {"runpy", "imp", "code", "codeop", "pickle", "marshal", "shelve", "builtins",
                     "ctypes", "cffi", "dill", "cloudpickle", "pty"}
# `load`/`loads` are fine on these (data formats, not code).
DATA_LOADERS = {"json", "tomllib", "toml", "yaml_safe"}

# (file, function) -> what it may use. Loading our OWN generated modules back (for the semantic
# diff) is the one import-style load; the calculator-impact step runs our own `apron` package in
# a subprocess. Anything else, anywhere else, fails.
ALLOWED = {
    ("extractors/render.py", "_load_module"): {"spec_from_file_location", "module_from_spec",
                                               "exec_module"},
    ("extractors/impact.py", "_figures"): {"sys.executable"},
}


def scan_source(text: str, filename: str) -> list[tuple[str, str, int]]:
    """(function qualname or '<module>', what, line) for every forbidden use in one file."""
    tree = ast.parse(text, filename)
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope = node.name if scope == "<module>" else f"{scope}.{node.name}"
        what = _forbidden(node)
        if what:
            found.append((scope, what, getattr(node, "lineno", 0)))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, "<module>")
    return found


def _forbidden(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            return node.func.id
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant)
                                                and keyword.value.value is False):
                return "shell=True"
    if isinstance(node, ast.Attribute):
        base = node.value.id if isinstance(node.value, ast.Name) else ""
        if node.attr == "executable" and base == "sys":
            return "sys.executable"
        if node.attr in FORBIDDEN_NAMES and not (node.attr in {"load", "loads"}
                                                  and base in DATA_LOADERS):
            return node.attr
    if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES - {"load", "loads"}:
        return node.id
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                return f"import {alias.name}"
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if module.split(".")[0] in FORBIDDEN_MODULES:
            return f"from {module} import"
        for alias in node.names:
            if alias.name in FORBIDDEN_NAMES | FORBIDDEN_CALLS:
                return f"from {module} import {alias.name}"
    return None


def extractor_modules() -> list[Path]:
    return sorted((REPO_ROOT / "extractors").rglob("*.py"))


def test_no_extractor_module_loads_or_runs_code_outside_the_allowlist():
    used: set[tuple[str, str, str]] = set()
    problems = []
    for path in extractor_modules():
        relative = path.relative_to(REPO_ROOT).as_posix()
        for scope, what, line in scan_source(path.read_text(encoding="utf-8"), relative):
            if what in ALLOWED.get((relative, scope), set()):
                used.add((relative, scope, what))
            else:
                problems.append(f"{relative}:{line} in {scope}: {what}")
    assert not problems, "code-running or import-style loaders in extractors/:\n" + "\n".join(problems)
    allowed = {(f, s, w) for (f, s), names in ALLOWED.items() for w in names}
    assert used == allowed, f"stale allowlist entries: {sorted(allowed - used)}"


def test_the_scan_covers_every_module():
    names = {p.relative_to(REPO_ROOT).as_posix() for p in extractor_modules()}
    assert {"extractors/render.py", "extractors/source.py", "extractors/vllm/convertor.py",
            "extractors/parsing/cpp_ts.py", "extractors/llamacpp/converter.py"} <= names
    assert len(names) >= 40


@pytest.mark.parametrize(("snippet", "expected"), [
    ("exec(text)", "exec"),
    ("eval(text)", "eval"),
    ("compile(text, 'x', 'exec')", "compile"),
    ("__import__(name)", "__import__"),
    ("import importlib\nimportlib.import_module(name)", "import_module"),
    ("from importlib import import_module", "from importlib import import_module"),
    ("import importlib.util\nimportlib.util.spec_from_file_location('m', p)", "spec_from_file_location"),
    ("from importlib.util import spec_from_file_location", "from importlib.util import spec_from_file_location"),
    ("spec.loader.exec_module(module)", "exec_module"),
    ("import importlib.util\nimportlib.util.find_spec('vllm.config')", "find_spec"),
    ("import runpy", "import runpy"),
    ("from runpy import run_path", "from runpy import"),
    ("import imp", "import imp"),
    ("import pickle", "import pickle"),
    ("import marshal", "import marshal"),
    ("import builtins", "import builtins"),
    ("os.system('git fetch')", "system"),
    ("subprocess.run('git fetch', shell=True)", "shell=True"),
    ("subprocess.run(args, shell=flag)", "shell=True"),
    ("subprocess.run([sys.executable, '-c', code])", "sys.executable"),
])
def test_scan_flags_each_kind_of_loader(snippet, expected):
    found = scan_source("def reader(text, name, p, spec, module, args, flag, code):\n"
                        + "".join(f"    {line}\n" for line in snippet.splitlines()), "x.py")
    assert [(scope, what) for scope, what, _ in found][-1:] == [("reader", expected)]


@pytest.mark.parametrize("snippet", [
    "re.compile(r'x')",
    "db.execute('PRAGMA x')",
    "ast.literal_eval(node_text)",
    "json.loads(text)",
    "tomllib.loads(text)",
    "subprocess.run(['git', 'fetch'], shell=False)",
    "module.evaluated_value",
    "from importlib import metadata",
])
def test_scan_lets_ordinary_code_through(snippet):
    assert scan_source(snippet + "\n", "x.py") == []
