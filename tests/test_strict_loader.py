"""The one strict loader of committed constraints (apron.constraints), shared by apron and
`extract`: modules are checked against generated/schema.py, a mismatch names file and field,
two directories load side by side, and `bump` refuses an unreadable previous generation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from apron.constraints import (
    ConstraintsError,
    engine_titles,
    load_constraints,
    load_engine,
    matches,
)
from apron.extractors.commands.bump import plan_bump
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import GeneratedError
from apron.extractors.report.generated_files import current_facts, render_generated
from tests.conftest import write_pin
from tests.vllm_miniatures import tree_v1

GENERATED = Path(__file__).resolve().parent.parent / "generated"
URL = "https://github.com/vllm-project/vllm"


@pytest.fixture
def copy(tmp_path) -> Path:
    target = tmp_path / "generated"
    shutil.copytree(GENERATED, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("value", "annotation", "expected"),
    [
        ("x", "str", True),
        (1, "str", False),
        (True, "int", False),
        (3, "int", True),
        (None, "bool | None", True),
        (False, "bool | None", True),
        ("no", "bool | None", False),
        (("a", "b"), "tuple[str, ...]", True),
        (("a", 1), "tuple[str, ...]", False),
        (["a"], "tuple[str, ...]", False),
        (("a", 1), "tuple[str, int]", True),
        ((), "tuple[str, ...]", True),
        (True, "int | None", False),
        (("a", ("b", "c")), "tuple[str, tuple[str, ...]]", True),
        (("a", ("b", 1)), "tuple[str, tuple[str, ...]]", False),
        (("a", ("b",), "c"), "tuple[str, tuple[str, ...]]", False),
        ((("x",), ("y", "z")), "tuple[tuple[str, ...], ...]", True),
        ((("x",), 1), "tuple[tuple[str, ...], ...]", False),
        (None, "tuple[str, ...] | None", True),
        ((1, 2), "tuple[str, ...] | tuple[int, ...]", True),
        (("a", 2), "tuple[str, ...] | tuple[int, ...]", False),
        (("call", ("x",)), "Expression", True),
        (1.5, "Expression", True),
        (["x"], "Expression", False),
        ((("+", 1), None), "tuple[Expression, ...]", True),
        ((["+"],), "tuple[Expression, ...]", False),
    ],
)
def test_values_are_checked_against_schema_annotations(value, annotation, expected):
    assert matches(value, annotation) is expected


def test_a_committed_directory_loads_and_checks_every_module():
    constraints = load_constraints(GENERATED)
    for engine in constraints.engines.values():
        if engine is None:
            continue
        for fact in engine.facts:
            assert isinstance(engine.rows(fact), tuple)
        assert engine.architecture_facts
    assert engine_titles(GENERATED)["llamacpp"] == "llama.cpp"


def test_a_field_of_the_wrong_type_names_file_row_and_field(copy):
    module = copy / "vllm" / "mla_model_types.py"
    edit(module, 'scope="main"', "scope=1")
    engine = load_engine("vllm", copy)
    with pytest.raises(ConstraintsError) as err:
        engine.rows("mla_model_types")
    assert str(module) in str(err.value)
    assert "py: row 6, field 'scope': 1 is not str" in str(err.value)


def test_a_renamed_field_is_an_error_not_a_default(copy):
    edit(copy / "vllm" / "kv_head_aliases.py", "KvHeadAlias(position=", "KvHeadAlias(pos=")
    with pytest.raises(ConstraintsError, match=r"kv_head_aliases\.py does not load.*pos"):
        load_engine("vllm", copy).rows("kv_head_aliases")


def test_a_missing_module_and_missing_header_names_are_errors(copy):
    (copy / "vllm" / "mla_gates.py").unlink()
    with pytest.raises(ConstraintsError, match=r"mla_gates\.py is missing"):
        load_engine("vllm", copy).rows("mla_gates")
    edit(copy / "sglang" / "__init__.py", "COMMIT_DATE = ", "COMMIT_WHEN = ")
    with pytest.raises(ConstraintsError, match=r"sglang/__init__\.py: COMMIT_DATE is missing"):
        load_engine("sglang", copy)


@pytest.mark.parametrize(
    "bad", ['("vllm/config/model.py",)', '("vllm/config/model.py", 1)', '["a", "b"]', "None"]
)
def test_sources_must_be_path_and_blob_pairs(copy, bad):
    module = copy / "vllm" / "mla_model_types.py"
    text = module.read_text()
    start = text.index("SOURCES: tuple[tuple[str, str], ...] = (") + len(
        "SOURCES: tuple[tuple[str, str], ...] = ("
    )
    module.write_text(text[:start] + bad + ", " + text[start:])
    with pytest.raises(
        ConstraintsError, match=r"mla_model_types\.py: SOURCES should be a tuple of"
    ):
        load_engine("vllm", copy).rows("mla_model_types")


def test_an_architecture_fact_must_name_a_declared_fact_and_role(copy):
    edit(copy / "llamacpp" / "__init__.py", '"registry"),', '"guess"),')
    with pytest.raises(ConstraintsError, match="role 'guess'"):
        load_engine("llamacpp", copy)


def test_a_module_may_import_only_the_schema(copy):
    edit(
        copy / "vllm" / "mla_gates.py",
        "from apron.generated.schema import MlaGate",
        "from apron.generated.schema import MlaGate\nfrom apron.generated.vllm import mla_model_types",
    )
    with pytest.raises(ConstraintsError, match="may import only apron.generated.schema"):
        load_engine("vllm", copy).rows("mla_gates")


def test_two_directories_load_side_by_side(copy):
    edit(copy / "vllm" / "__init__.py", 'COMMIT_DATE = "2026-07-24"', 'COMMIT_DATE = "2030-01-01"')
    edit(copy / "vllm" / "mla_model_types.py", 'model_type="deepseek_v3"', 'model_type="other"')
    before, after = load_engine("vllm"), load_engine("vllm", copy)
    assert (before.commit_date, after.commit_date) == ("2026-07-24", "2030-01-01")
    types_before = [r.model_type for r in before.rows("mla_model_types")]
    types_after = [r.model_type for r in after.rows("mla_model_types")]
    assert "other" in types_after and "other" not in types_before
    assert types_after.count("deepseek_v3") == types_before.count("deepseek_v3") - 1


# ---------------------------------------------------------------- extract reads through it


def test_extract_names_the_file_of_a_module_that_does_not_load(copy):
    edit(copy / "vllm" / "mla_gates.py", "MlaGate(scope=", "MlaGate(scopes=")
    with pytest.raises(GeneratedError, match=r"mla_gates\.py does not load.*scopes"):
        current_facts_at(copy, "vllm")


def current_facts_at(generated: Path, engine: str):
    from apron.extractors.runner.pipeline import ProjectPaths

    return current_facts(ProjectPaths(generated.parent), ENGINES[engine])


def test_rows_that_no_longer_fit_the_record_name_the_field(copy):
    schema = (copy / "schema.py").read_text()
    start = schema.index("class MlaModelType(Record):")
    block = schema[start:].split("\n\n\n", 1)[0]
    (copy / "schema.py").write_text(
        schema.replace(block, block.replace("    scope: str\n", "    scope: str\n    extra: str\n"))
    )
    module = copy / "vllm" / "mla_model_types.py"
    module.write_text(
        module.read_text().replace("MlaModelType(scope=", 'MlaModelType(extra="x", scope=')
    )
    with pytest.raises(GeneratedError, match=r"mla_model_types\.py: row 1, field 'extra'"):
        current_facts_at(copy, "vllm")


def test_bump_refuses_when_the_previous_generation_cannot_be_read(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1"), (tree_v1(), "v2")])
    write_pin(project, "vllm", URL, shas[0])
    run(ENGINES["vllm"], project, commit=None, source=str(repo))
    edit(project.generated / "vllm" / "mla_model_types.py", 'scope="main"', "scope=None")
    with pytest.raises(GeneratedError, match="bump refuses to run.*mla_model_types.py.*'scope'"):
        plan_bump(ENGINES["vllm"], project, to=shas[1], source=str(repo), with_impact=False)


def test_plain_extract_says_when_it_cannot_read_the_previous_generation(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, shas[0])
    run(ENGINES["vllm"], project, commit=None, source=str(repo))
    edit(project.generated / "vllm" / "mla_model_types.py", 'scope="main"', "scope=None")
    result = run(ENGINES["vllm"], project, commit=None, source=str(repo))
    assert result.previous is None
    assert any("previous generation cannot be read" in n for n in result.notices)
    assert current_facts(project, ENGINES["vllm"]) is not None  # rewritten, readable again


def test_a_neighbour_that_cannot_be_read_is_an_error_unless_described(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, shas[0])
    facts = run(ENGINES["vllm"], project, commit=None, source=str(repo)).facts
    shutil.copytree(GENERATED / "sglang", project.generated / "sglang")
    edit(project.generated / "sglang" / "__init__.py", "FACTS = ", "FACTS_ = ")
    with pytest.raises(GeneratedError, match="FACTS is missing"):
        render_generated(project, facts)
    said: list[str] = []
    rendered = render_generated(project, facts, unreadable=said)
    assert "SGLang" not in rendered["MATRIX.md"].split("## MLA")[0].split("No constraints")[0]
    assert said and "generated/sglang cannot be read" in said[0]
