"""Every record of apron with more than 4 fields (a Record, NamedTuple or dataclass) is built by
keyword: no call in apron/ or tests/ passes one of them a positional argument."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MOST_POSITIONAL_FIELDS = 4


def module_name(path: Path) -> str:
    """The dotted module a file under the repository is (apron/x/y.py -> apron.x.y)."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def calculator_files() -> list[Path]:
    """apron's own modules (not the extractors, generated or pins linked into it)."""
    return [
        path
        for path in sorted((REPO / "apron").rglob("*.py"))
        if path.relative_to(REPO / "apron").parts[0] not in ("extractors", "generated", "pins")
    ]


def is_record(node: ast.ClassDef) -> bool:
    bases = [ast.unparse(base) for base in node.bases]
    decorators = [ast.unparse(decorator) for decorator in node.decorator_list]
    return any(base.endswith("NamedTuple") or base == "Record" for base in bases) or any(
        "dataclass" in decorator for decorator in decorators
    )


def record_fields(node: ast.ClassDef) -> list[str]:
    return [
        statement.target.id
        for statement in node.body
        if isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and "ClassVar" not in ast.unparse(statement.annotation)
    ]


def large_records() -> dict[tuple[str, str], list[str]]:
    """(module, class) -> fields, for every record of apron with more than 4 fields."""
    found = {}
    for path in calculator_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and is_record(node):
                fields = record_fields(node)
                if len(fields) > MOST_POSITIONAL_FIELDS:
                    found[(module_name(path), node.name)] = fields
    return found


def names_in_scope(tree: ast.Module, module: str) -> dict[str, tuple[str, str]]:
    """Local name -> (module, name) it stands for: classes defined here and names imported;
    a module imported under a name maps to (module, "")."""
    scope: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            scope.setdefault(node.name, (module, node.name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                scope[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                scope[alias.asname or alias.name.split(".")[0]] = (alias.name, "")
    return scope


def constructed_record(
    call: ast.Call, scope: dict[str, tuple[str, str]], records: dict
) -> tuple[str, str] | None:
    """The (module, class) of a large record this call constructs, or None."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in scope:
        where, name = scope[func.id]
        for key in ((where, name), (f"{where}.{name}", "")):
            if key in records:
                return key
        submodule = (f"{where}.{name}", func.id)
        return submodule if submodule in records else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        where, name = scope.get(func.value.id, ("", ""))
        module = f"{where}.{name}" if name else where
        return (module, func.attr) if (module, func.attr) in records else None
    return None


def positional_constructions() -> list[str]:
    records = large_records()
    offenders = []
    # a file that never names a large record's class cannot construct one (an alias is named
    # where it is imported): only those that do are parsed
    class_names = {name or module.rpartition(".")[2] for module, name in records}
    for path in [*calculator_files(), *sorted((REPO / "tests").rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        if not any(name in text for name in class_names):
            continue
        tree = ast.parse(text)
        scope = names_in_scope(tree, module_name(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                record = constructed_record(node, scope, records)
                if record is not None:
                    where = path.relative_to(REPO)
                    offenders.append(
                        f"{where}:{node.lineno}: {record[1]}({len(node.args)} positional)"
                    )
    return sorted(offenders)


def test_the_scan_knows_the_large_records():
    records = large_records()
    assert records[("apron.results", "Plan")][:2] == ["label", "source"]
    assert ("apron.results", "EngineView") in records
    assert ("apron.results", "GpuShare") in records and ("apron.results", "Capacity") in records
    assert ("apron.results", "HeadCount") in records  # 6 fields
    assert ("apron.results", "MlaDecision") not in records  # 4 fields: positional allowed


def test_the_scan_finds_a_positional_construction(tmp_path):
    tree = ast.parse(
        "from apron.results import Plan\nfrom apron import results\nPlan(1)\nresults.Plan(2)\n"
    )
    scope = names_in_scope(tree, "t")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [constructed_record(c, scope, large_records()) for c in calls] == [
        ("apron.results", "Plan"),
        ("apron.results", "Plan"),
    ]


def test_no_record_with_more_than_four_fields_is_built_positionally():
    found = positional_constructions()
    assert found == [], "name them: .venv/bin/python tests/test_records_by_keyword.py"


def rewrite_by_keyword(path: Path, records: dict) -> int:
    """Rewrite the positional arguments of large-record constructions in one file as keywords
    (field=value, in field order); the count of arguments named. A starred argument is left."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    scope = names_in_scope(tree, module_name(path))
    starts = [0]
    for line in text.encode("utf-8").splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    inserts = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        record = constructed_record(node, scope, records)
        if record is None or any(isinstance(arg, ast.Starred) for arg in node.args):
            continue
        for arg, field in zip(node.args, records[record], strict=False):
            inserts.append((starts[arg.lineno - 1] + arg.col_offset, f"{field}=".encode()))
    data = text.encode("utf-8")
    for offset, name in sorted(inserts, reverse=True):
        data = data[:offset] + name + data[offset:]
    if inserts:
        path.write_bytes(data)
    return len(inserts)


if __name__ == "__main__":  # python tests/test_records_by_keyword.py: fix them, then ruff format
    large = large_records()
    for file in [*calculator_files(), *sorted((REPO / "tests").rglob("*.py"))]:
        if count := rewrite_by_keyword(file, large):
            print(f"{file.relative_to(REPO)}: {count} arguments named")
