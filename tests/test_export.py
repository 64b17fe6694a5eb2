"""The JSON export: every committed constraints.json validates against generated/schema.json and
equals the Python modules it sits beside, read through apron's strict loader."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from apron.constraints import engine_directory, load_constraints
from apron.extractors.commands.check import check_offline
from apron.extractors.commands.cli import app
from apron.extractors.engines import ENGINES, all_record_types
from apron.extractors.report.export import EXPORT_NAME, SCHEMA_VERSION, render_json_schema
from apron.extractors.runner.pipeline import run
from tests.conftest import write_pin
from tests.vllm_miniatures import tree_v1

REPO_ROOT = Path(__file__).resolve().parent.parent
GENERATED = REPO_ROOT / "generated"
COMMITTED = sorted(p.parent.name for p in GENERATED.glob(f"*/{EXPORT_NAME}"))
runner = CliRunner()


def schema() -> dict:
    return json.loads((GENERATED / "schema.json").read_text(encoding="utf-8"))


def validator(document_schema: dict | None = None) -> jsonschema.Draft202012Validator:
    if document_schema is None:
        return committed_validator()
    jsonschema.Draft202012Validator.check_schema(document_schema)
    return jsonschema.Draft202012Validator(document_schema)


@functools.cache
def committed_validator() -> jsonschema.Draft202012Validator:
    """The validator of the committed schema, checked and built once per process."""
    committed = schema()
    jsonschema.Draft202012Validator.check_schema(committed)
    return jsonschema.Draft202012Validator(committed)


def export(engine: str, generated: Path = GENERATED) -> dict:
    return json.loads((generated / engine / EXPORT_NAME).read_text(encoding="utf-8"))


def plain(value: object) -> object:
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


def module_view(engine_id: str, generated: Path) -> dict:
    """What the Python modules of one engine say, in the export's shape."""
    engine = load_constraints(generated).get(engine_id)
    assert engine is not None
    directory = engine_directory(engine)
    facts = {}
    for name in engine.facts:
        module, rows = directory.fact_module(name)
        facts[name] = {
            "ordered": module.ORDERED,
            "sources": [{"path": p, "blob": b} for p, b in module.SOURCES],
            "rows": [{k: plain(v) for k, v in row._asdict().items()} for row in rows],
            "record": type(rows[0]).__name__ if rows else None,
        }
    return {
        "engine": engine.engine,
        "commit": engine.commit,
        "commit_date": engine.commit_date,
        "upstream_url": engine.upstream,
        "fact_order": list(engine.facts),
        "facts": facts,
        "warnings": [{k: plain(v) for k, v in w._asdict().items()} for w in directory.warnings()],
    }


def export_view(document: dict) -> dict:
    view = {k: document[k] for k in ("engine", "commit", "commit_date", "upstream_url")}
    view["fact_order"] = document["fact_order"]
    view["warnings"] = document["warnings"]
    view["facts"] = {
        name: {
            "ordered": fact["ordered"],
            "sources": fact["sources"],
            "rows": fact["rows"],
            "record": fact["record"] if fact["rows"] else None,
        }
        for name, fact in document["facts"].items()
    }
    return view


def test_every_engine_with_modules_has_an_export():
    with_modules = sorted(
        p.parent.name for p in GENERATED.glob("*/__init__.py") if p.parent.name in ENGINES
    )
    assert with_modules == COMMITTED
    # transformers is a pinned library, not an engine: its JSON is config_defaults.json
    assert not (GENERATED / "transformers" / EXPORT_NAME).exists()
    assert {"llamacpp", "sglang", "vllm"} <= set(COMMITTED)


def test_the_committed_schema_is_the_rendered_one_and_is_a_valid_2020_12_schema():
    assert (GENERATED / "schema.json").read_text(encoding="utf-8") == render_json_schema(
        all_record_types()
    )
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


@pytest.mark.parametrize("engine", COMMITTED)
def test_committed_export_validates_against_the_schema(engine):
    errors = sorted(validator().iter_errors(export(engine)), key=str)
    assert errors == []


@pytest.mark.parametrize("engine", COMMITTED)
def test_committed_export_equals_the_python_modules(engine):
    document = export(engine)
    assert document["schema_version"] == SCHEMA_VERSION
    assert export_view(document) == module_view(engine, GENERATED)


@pytest.mark.parametrize("engine", COMMITTED)
def test_export_text_is_deterministic_json(engine):
    text = (GENERATED / engine / EXPORT_NAME).read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_every_fact_a_engine_declares_is_in_its_export():
    for engine in COMMITTED:
        declared = {k.name for k in ENGINES[engine].fact_kinds}
        assert set(export(engine)["facts"]) == declared, engine


# ------------------------------------------------------------------ the schema rejects


# Each case mutates a small valid document: the llama.cpp export cut to a few rows of each
# fact (asserted valid before the mutation), so a rejection is the mutation's alone and costs
# no validation of 3 MB of rows.


def small_valid_export(rows_per_fact: int = 3) -> dict:
    """A fresh copy of the llama.cpp export with at most `rows_per_fact` rows per fact, which the
    committed schema accepts."""
    document = export("llamacpp")
    for fact in document["facts"].values():
        fact["rows"] = fact["rows"][:rows_per_fact]
    assert validator().is_valid(document)
    return document


def _first_fact_with_rows(document: dict) -> dict:
    return next(f for f in document["facts"].values() if f["rows"])


def test_schema_rejects_a_row_with_a_field_the_record_does_not_have():
    document = small_valid_export()
    _first_fact_with_rows(document)["rows"][0]["invented"] = "x"
    assert not validator().is_valid(document)


def test_schema_rejects_a_row_missing_a_field():
    document = small_valid_export()
    row = _first_fact_with_rows(document)["rows"][0]
    del row[next(iter(row))]
    assert not validator().is_valid(document)


def test_schema_rejects_rows_of_another_record_type_than_the_fact_names():
    document = small_valid_export()
    facts = [f for f in document["facts"].values() if f["rows"]]
    first, other = facts[0], next(f for f in facts if f["record"] != facts[0]["record"])
    first["rows"] = other["rows"]
    assert not validator().is_valid(document)


def test_schema_rejects_another_schema_version_and_a_short_commit():
    document = small_valid_export()
    document["schema_version"] = SCHEMA_VERSION + 1
    assert not validator().is_valid(document)
    document = small_valid_export()
    document["commit"] = document["commit"][:12]
    assert not validator().is_valid(document)


def test_schema_rejects_a_wrong_field_type():
    document = small_valid_export()
    row = document["facts"]["arch_names"]["rows"][0]
    row["in_enum"] = "yes"
    assert not validator().is_valid(document)


# ------------------------------------------------------------------ written with the modules


URL = "https://github.com/vllm-project/vllm"


@pytest.fixture
def extracted(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1", "2026-03-02T10:00:00+00:00")])
    write_pin(project, "vllm", URL, shas[0], "2026-03-02")
    run(ENGINES["vllm"], project, commit=None, source=str(repo))
    return project, shas


def test_extract_writes_the_export_and_the_schema_with_the_modules(extracted):
    project, shas = extracted
    document = export("vllm", project.generated)
    assert (document["engine"], document["commit"], document["upstream_url"]) == (
        "vllm",
        shas[0],
        URL,
    )
    assert document["commit_date"] == "2026-03-02"
    assert (project.generated / "schema.json").is_file()
    local_schema = json.loads((project.generated / "schema.json").read_text(encoding="utf-8"))
    assert list(validator(local_schema).iter_errors(document)) == []
    assert export_view(document) == module_view("vllm", project.generated)
    sources = [s for f in document["facts"].values() for s in f["sources"]]
    assert sources and all(len(s["blob"]) == 40 for s in sources)


def test_check_offline_names_a_hand_edited_export(extracted):
    project, _ = extracted
    path = project.generated / "vllm" / EXPORT_NAME
    path.write_text(path.read_text(encoding="utf-8").replace('"vllm"', '"vLLM"', 1))
    assert check_offline(project) == ["vllm/constraints.json"]
    result = runner.invoke(app, ["check", "--offline", "--root", str(project.root)])
    assert result.exit_code == 1 and "vllm/constraints.json" in result.output


def test_check_offline_names_a_missing_schema(extracted):
    project, _ = extracted
    (project.generated / "schema.json").unlink()
    assert check_offline(project) == ["schema.json"]
