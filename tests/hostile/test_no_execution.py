"""Engine code is parsed, never run: trees whose every file would leave a marker, open a socket
or loop forever if imported extract to the same facts as the clean trees, and nothing happens.
A scan of the extractors package finds no import-style loader, exec, eval or compile outside
one allowlisted function that loads our own generated modules."""

from __future__ import annotations

import ast
import os
import signal
import socket
from pathlib import Path

import pytest

from apron import constraints
from apron.extractors.errors import ParseError
from tests.conftest import REPO_ROOT, commit_tree
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
        raise AssertionError(
            f"extraction still running after {WATCHDOG_SECONDS}s: did it run "
            "the payload's endless loop?"
        )

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
    project, make_repo, tmp_path, listener, watchdog, monkeypatch, engine
):
    marker = tmp_path / "EXECUTED"
    port = listener.getsockname()[1]
    loaded: list[Path] = []
    real_load = constraints._execute
    monkeypatch.setattr(
        constraints,
        "_execute",
        lambda path, schema: loaded.append(Path(path)) or real_load(path, schema),
    )
    repo, shas = make_repo(
        [
            (clean_tree(engine), "clean miniature"),
            (hostile_tree(engine, marker, port), "every file carries a payload"),
        ]
    )
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
    for path in project.generated.rglob("*.py"):
        assert generated_module_problems(path.read_text(encoding="utf-8")) == [], path


# ------------------------------------------------------------------ static scan of extractors/

# Calls that run code or load a module from a path or a name.
FORBIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "execfile", "breakpoint"}
# Attributes (or names imported from a module) that load or run code.
FORBIDDEN_NAMES = {
    "import_module",
    "find_spec",
    "spec_from_file_location",
    "spec_from_loader",
    "module_from_spec",
    "exec_module",
    "load_module",
    "load_source",
    "SourceFileLoader",
    "SourcelessFileLoader",
    "ExtensionFileLoader",
    "run_path",
    "run_module",
    "system",
    "popen",
    "execv",
    "execve",
    "execvp",
    "execvpe",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "spawnv",
    "spawnve",
    "spawnl",
    "spawnle",
    "startfile",
    "loads",
    "load",
}
# Modules whose only use would be to run or unpickle something.
FORBIDDEN_MODULES = {
    "runpy",
    "imp",
    "code",
    "codeop",
    "pickle",
    "marshal",
    "shelve",
    "builtins",
    "ctypes",
    "cffi",
    "dill",
    "cloudpickle",
    "pty",
}
# `load`/`loads` are fine on these (data formats, not code).
DATA_LOADERS = {"json", "tomllib", "toml", "yaml_safe"}

# (file, function) -> what it may use. Nothing: loading our OWN generated modules back (for
# the semantic diff and the calculator impact) goes through apron's strict loader
# (apron/constraints.py, see test_only_the_strict_loader_loads_modules_in_apron).
ALLOWED: dict[tuple[str, str], set[str]] = {}


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
            if keyword.arg == "shell" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                return "shell=True"
    if isinstance(node, ast.Attribute):
        base = node.value.id if isinstance(node.value, ast.Name) else ""
        if node.attr == "executable" and base == "sys":
            return "sys.executable"
        if node.attr in FORBIDDEN_NAMES and not (
            node.attr in {"load", "loads"} and base in DATA_LOADERS
        ):
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
    assert not problems, "code-running or import-style loaders in extractors/:\n" + "\n".join(
        problems
    )
    allowed = {(f, s, w) for (f, s), names in ALLOWED.items() for w in names}
    assert used == allowed, f"stale allowlist entries: {sorted(allowed - used)}"


# The strict loader is the one place apron (or anything) executes generated modules: from their
# files, with `from apron.generated.schema import ...` answered by the directory's own schema.
APRON_ALLOWED = {
    ("apron/constraints.py", "<module>"): {"import builtins"},
    ("apron/constraints.py", "_run"): {"exec"},
    # its cache: the bytes the loader read, compiled once per content, and checked rows, kept
    # by the hash of those bytes (as a checked hash-based .pyc is); marshal reads back only
    # what the cache wrote under that hash
    ("apron/generated_cache.py", "<module>"): {"import marshal"},
    ("apron/generated_cache.py", "compiled"): {"compile"},
    ("apron/generated_cache.py", "_read"): {"loads"},
    # and one class's rows of such an entry, decoded when the class is first read
    ("apron/generated_cache.py", "decoded"): {"loads"},
    ("apron/constraints.py", "default_directory"): {"find_spec"},
}


def test_only_the_strict_loader_loads_modules_in_apron():
    used: set[tuple[str, str, str]] = set()
    problems = []
    for path in sorted((REPO_ROOT / "apron").rglob("*.py")):
        relative = path.relative_to(REPO_ROOT).as_posix()
        for scope, what, line in scan_source(path.read_text(encoding="utf-8"), relative):
            if what in APRON_ALLOWED.get((relative, scope), set()):
                used.add((relative, scope, what))
            else:
                problems.append(f"{relative}:{line} in {scope}: {what}")
    assert not problems, "\n".join(problems)
    allowed = {(f, s, w) for (f, s), names in APRON_ALLOWED.items() for w in names}
    assert used == allowed, f"stale allowlist entries: {sorted(allowed - used)}"


def test_the_scan_covers_every_module():
    names = {p.relative_to(REPO_ROOT).as_posix() for p in extractor_modules()}
    assert {
        "extractors/report/render.py",
        "extractors/git/source.py",
        "extractors/vllm/convertor.py",
        "extractors/parsing/cpp_ts.py",
        "extractors/llamacpp/converter.py",
    } <= names
    assert len(names) >= 40


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("exec(text)", "exec"),
        ("eval(text)", "eval"),
        ("compile(text, 'x', 'exec')", "compile"),
        ("__import__(name)", "__import__"),
        ("import importlib\nimportlib.import_module(name)", "import_module"),
        ("from importlib import import_module", "from importlib import import_module"),
        (
            "import importlib.util\nimportlib.util.spec_from_file_location('m', p)",
            "spec_from_file_location",
        ),
        (
            "from importlib.util import spec_from_file_location",
            "from importlib.util import spec_from_file_location",
        ),
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
    ],
)
def test_scan_flags_each_kind_of_loader(snippet, expected):
    found = scan_source(
        "def reader(text, name, p, spec, module, args, flag, code):\n"
        + "".join(f"    {line}\n" for line in snippet.splitlines()),
        "x.py",
    )
    assert [(scope, what) for scope, what, _ in found][-1:] == [("reader", expected)]


@pytest.mark.parametrize(
    "snippet",
    [
        "re.compile(r'x')",
        "db.execute('PRAGMA x')",
        "ast.literal_eval(node_text)",
        "json.loads(text)",
        "tomllib.loads(text)",
        "subprocess.run(['git', 'fetch'], shell=False)",
        "module.evaluated_value",
        "from importlib import metadata",
    ],
)
def test_scan_lets_ordinary_code_through(snippet):
    assert scan_source(snippet + "\n", "x.py") == []


# ------------------------------------------------------------------ hostile file names


def generated_module_problems(text: str) -> list[str]:
    """Statements of a generated module that are not plain data: the only allowed ones are a
    docstring, `from __future__`/`from apron.generated.schema`/`from apron.record import Record`,
    assignments of literals and calls of schema record types, and the record classes of
    schema.py. Checked with ast.parse: nothing is run."""
    tree = ast.parse(text)
    schema_names = {
        a.asname or a.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "apron.generated.schema"
        for a in node.names
    }

    def is_data(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Tuple | ast.List):
            return all(is_data(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return is_data(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return (
                node.func.id in schema_names
                and not node.args
                and all(k.arg and is_data(k.value) for k in node.keywords)
            )
        return False

    problems = []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module in (
            "__future__",
            "apron.generated.schema",
        ):
            continue
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "apron.record"
            and [(a.name, a.asname) for a in node.names] == [("Record", None)]
        ):
            continue
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and is_data(node.value)
        ):
            continue
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
            and is_data(node.value)
        ):
            continue
        if (
            isinstance(node, ast.ClassDef)
            and [ast.unparse(b) for b in node.bases] == ["Record"]
            and not node.keywords
            and not node.decorator_list
            and all(
                isinstance(s, ast.AnnAssign)
                and s.value is None
                or isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Constant)
                for s in node.body
            )
        ):
            continue
        problems.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return problems


def test_committed_generated_modules_are_plain_data():
    modules = sorted((REPO_ROOT / "generated").rglob("*.py"))
    assert modules
    for path in modules:
        assert generated_module_problems(path.read_text(encoding="utf-8")) == [], path


def test_data_check_catches_code():
    assert generated_module_problems('"""doc"""\nimport os\n') == ["line 2: import os"]
    assert generated_module_problems(
        'from apron.generated.schema import R\nROWS = (R(a=open("x")),)\n'
    )
    assert generated_module_problems('X = 1\nopen("x", "w").write("y")\n')


INJECTED = 'open("EXECUTED", "w").write("from a file name")'
HOSTILE_NAMES = [
    # (engine, a file name in a folder the extractor lists, the tree's file it imitates)
    (
        "sglang",
        f"python/sglang/srt/models/evil\n{INJECTED}\n#.py",
        "python/sglang/srt/models/gemma.py",
    ),
    (
        "trtllm",
        f"tensorrt_llm/_torch/models/modeling_x\n{INJECTED}\n#.py",
        "tensorrt_llm/_torch/models/modeling_qwen3.py",
    ),
    ("llamacpp", f"src/models/x\n{INJECTED}\n#.cpp", "src/models/gemma2.cpp"),
    ("llamacpp", f"conversion/x\u2028{INJECTED}\u2028#.py", "conversion/base.py"),
    ("sglang", "python/sglang/srt/models/caf\udce9.py", "python/sglang/srt/models/gemma.py"),
]


@pytest.mark.parametrize(("engine", "name", "imitates"), HOSTILE_NAMES)
def test_hostile_file_name_never_becomes_code_in_generated(
    project, make_repo, tmp_path, monkeypatch, engine, name, imitates
):
    """A file name with a line break (or bytes that are not UTF-8) in a folder the extractor
    lists would end up in the `# source:` header of a generated module, which the next run
    loads back and apron imports. It is a clear error instead, and nothing runs."""
    monkeypatch.chdir(tmp_path)  # the injected code writes EXECUTED into the current folder
    repo, shas = make_repo([(clean_tree(engine), "clean")])
    hostile = repo / os.fsencode(name).decode("utf-8", "surrogateescape")
    hostile.write_bytes((repo / imitates).read_bytes())
    shas.append(commit_tree(repo, {}, "a file whose name carries code"))
    extract_repo(project, repo, engine, shas[0])
    with pytest.raises(ParseError) as info:
        extract_repo(project, repo, engine, shas[1])
    assert "file name" in str(info.value) and "\n" + INJECTED not in str(info.value)
    extract_repo(project, repo, engine, shas[0])  # loads the generated modules back
    assert not (tmp_path / "EXECUTED").exists()
    for path in (project.generated).rglob("*.py"):
        assert generated_module_problems(path.read_text(encoding="utf-8")) == [], path


def test_header_quotes_a_value_that_could_end_its_comment_line():
    """Defence in depth behind the snapshot's check: the renderer itself never lets a value
    end a `#` line."""
    from apron.extractors.records import EngineFacts, FactResult, SourceFile
    from apron.extractors.report.render import render_fact_module
    from apron.extractors.vllm import ENGINE as VLLM_ENGINE

    kind = VLLM_ENGINE.facts[0].kind
    hostile = f"a\n{INJECTED}\n\u2028{INJECTED}\r#.py"
    facts = EngineFacts(
        engine="vllm",
        commit="a" * 40,
        commit_date="2026-01-01",
        upstream_url=f"https://x/\n{INJECTED}",
        facts=(),
        warnings=(),
    )
    text = render_fact_module(
        facts, FactResult(kind=kind, records=(), sources=(SourceFile(path=hostile, blob="b" * 40),))
    )
    assert generated_module_problems(text) == []
    assert '# source: "a\\n' in text and "\n" + INJECTED not in text
