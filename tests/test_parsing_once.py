"""Each parse primitive is defined once: an AST scan of extractors/ finds every definition of a
primitive's name (module-level functions and methods alike), and there is one, in the module of
extractors/parsing/ that owns it. Python's and C++'s readers are separate layers, so a C++
primitive of the same name (cpp_ts.string_value) is its own."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

EXTRACTORS = Path(__file__).resolve().parent.parent / "extractors"

# name -> the module that defines it, for the Python reader layer
PYTHON_PRIMITIVES = {
    # python_ts.py: the one view
    "parse_python": "parsing/python_ts.py",
    "string_value": "parsing/python_ts.py",
    "statements": "parsing/python_ts.py",
    "walk": "parsing/python_ts.py",
    "unparenthesize": "parsing/python_ts.py",
    "call_name": "parsing/python_ts.py",
    "call_parts": "parsing/python_ts.py",
    "arguments": "parsing/python_ts.py",
    "keywords": "parsing/python_ts.py",
    "single_assignment": "parsing/python_ts.py",
    "assigned_name": "parsing/python_ts.py",
    "assignments": "parsing/python_ts.py",
    "top_level_assignments": "parsing/python_ts.py",
    "if_clauses": "parsing/python_ts.py",
    "from_import": "parsing/python_ts.py",
    "import_source": "parsing/python_ts.py",
    "imported_names": "parsing/python_ts.py",
    "top_level_classes": "parsing/python_ts.py",
    "class_named": "parsing/python_ts.py",
    "methods_of": "parsing/python_ts.py",
    "class_methods": "parsing/python_ts.py",
    "defined_name": "parsing/python_ts.py",
    "undecorated": "parsing/python_ts.py",
    "returned": "parsing/python_ts.py",
    "conjuncts": "parsing/python_ts.py",
    "comparison": "parsing/python_ts.py",
    "single_comparison": "parsing/python_ts.py",
    "number_literal": "parsing/python_ts.py",
    "name_of": "parsing/python_ts.py",
    "attribute": "parsing/python_ts.py",
    # python_classes.py: class bases and the one MRO
    "class_bases": "parsing/python_classes.py",
    "base_names": "parsing/python_classes.py",
    "c3_linearization": "parsing/python_classes.py",
    # python_imports.py: import resolution
    "absolute_module": "parsing/python_imports.py",
    "module_of_path": "parsing/python_imports.py",
    "imported_module": "parsing/python_imports.py",
    "imported_path_stem": "parsing/python_imports.py",
    # config_reads.py: config-field reads (one root table) and truth when absent
    "config_read": "parsing/config_reads.py",
    "config_root": "parsing/config_reads.py",
    "literal_default": "parsing/config_reads.py",
    "truth_when_absent": "parsing/config_reads.py",
    # python_forms.py and python_describe.py
    "if_branch": "parsing/python_forms.py",
    "parameters": "parsing/python_forms.py",
    "binary": "parsing/python_forms.py",
    "unary": "parsing/python_forms.py",
    "string_sequence": "parsing/python_describe.py",
    "int_value": "parsing/python_describe.py",
    "config_ref": "parsing/python_describe.py",
}
# the C++ layer's primitives of the same names live in cpp_ts.py
CPP_LAYER = "parsing/cpp_ts.py"
# Definitions of a primitive's name that are not a second reader, each with its reason.
NOT_A_SECOND_READER = {
    # a rule-term builder (#36 item 2 rewrites it): terms from python_ts's nodes; its private
    # _conjunct_nodes is python_ts.conjuncts again, left to that rewrite
    ("conjuncts", "sglang/memory_fraction.py"),
}
# the names of the readers' other copies, gone: none may come back
GONE = (
    "_bases",
    "_when_absent",
    "_truth_when_absent",
    "_reads_false_when_absent",
    "_stem",
    "_module_file",
    "_string_list",
    "_attribute_chain",
    "walk_code",
    "literal_text",
)


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def definitions() -> dict[str, list[str]]:
    """name -> the modules (relative to extractors/) that define a module-level function or a
    method of that name (a closure inside a function is the function's own business)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(EXTRACTORS.rglob("*.py")):
        module = path.relative_to(EXTRACTORS).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            members = node.body if isinstance(node, ast.ClassDef) else [node]
            for member in members:
                if isinstance(member, FUNCTIONS):
                    found[member.name].append(module)
    return found


def test_each_python_primitive_is_defined_once_in_its_module():
    found = definitions()
    twice = {
        name: [
            m
            for m in found[name]
            if m != CPP_LAYER and (name, m) not in NOT_A_SECOND_READER and m != home
        ]
        for name, home in PYTHON_PRIMITIVES.items()
    }
    assert {name: where for name, where in twice.items() if where} == {}
    assert {name: found[name].count(home) for name, home in PYTHON_PRIMITIVES.items()} == {
        name: 1 for name in PYTHON_PRIMITIVES
    }


def test_the_copies_that_were_merged_stay_gone():
    found = definitions()
    assert {name: found[name] for name in GONE if found.get(name)} == {}


def test_no_reader_imports_a_second_python_parser():
    """No libcst (or parso, redbaron); the standard library's ast only to read a literal's
    value (`ast.literal_eval`, which never evaluates code)."""
    offenders = []
    for path in sorted(EXTRACTORS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = path.relative_to(EXTRACTORS).as_posix()
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in ("libcst", "parso", "redbaron") for n in names):
                offenders.append((module, names))
            if isinstance(node, ast.ImportFrom) and node.module == "ast":
                offenders.append((module, names))
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "ast"
                and node.attr != "literal_eval"
            ):
                offenders.append((module, [f"ast.{node.attr}"]))
    assert offenders == []
