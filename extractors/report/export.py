"""Records -> `generated/<engine>/constraints.json` and its JSON Schema `generated/schema.json`."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable
from typing import Any

from apron.extractors.parsing.expressions import Expression
from apron.extractors.records import EngineFacts, ExtractionWarning, FactResult, Record

EXPORT_NAME = "constraints.json"
SCHEMA_NAME = "schema.json"
# 2: rules as expressions of apron/expressions.py (llama.cpp facts); 3: the serving conditions
# too; 4: vLLM's state shapes, indexer layers and sizing paths too; 5: SGLang's config-field
# conditions too; 6: SGLang's prefill-graph rules and ServerArgs defaults too, its config
# conditions as rules only (the structured fields dropped)
SCHEMA_VERSION = 6
SCHEMA_ID = "https://apron-extract/generated/schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def json_text(value: object) -> str:
    """Deterministic JSON: sorted keys, two-space indent, UTF-8 kept, newline at the end."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _plain(value: object) -> object:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def record_object(record: Record) -> dict[str, object]:
    """One row as a JSON object: the record's fields, tuples as arrays."""
    return {name: _plain(value) for name, value in record.model_dump().items()}


def _fact_object(result: FactResult) -> dict[str, object]:
    kind = result.kind
    return {
        "record": kind.record.__name__,
        "title": kind.title,
        "description": kind.description,
        "ordered": kind.ordered,
        "sources": [{"path": s.path, "blob": s.blob} for s in result.sources],
        "rows": [record_object(r) for r in result.sorted_records()],
    }


def render_engine_json(facts: EngineFacts) -> str:
    """`generated/<engine>/constraints.json`: the provenance header and every fact's rows, in
    the order of the Python modules (rows sorted unless the fact's order carries meaning)."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "engine": facts.engine,
        "commit": facts.commit,
        "commit_date": facts.commit_date,
        "upstream_url": facts.upstream_url,
        "fact_order": [r.kind.name for r in facts.facts],
        "facts": {r.kind.name: _fact_object(r) for r in facts.facts},
        "warnings": [record_object(w) for w in facts.warnings],
    }
    return json_text(document)


# ---------------------------------------------------------------- schema

# apron/expressions.py: a literal, a name, or a node (its name first, then its operands)
EXPRESSION_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": ["string", "integer", "number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": "#/$defs/Expression"}},
    ]
}


def field_schema(tp: object) -> dict[str, Any]:
    """The JSON Schema of one record field type (str, int, bool, None, unions, tuples, and an
    expression of the rule language)."""
    if tp is Expression:
        return {"$ref": "#/$defs/Expression"}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is type(None):
        return {"type": "null"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [field_schema(a) for a in args]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": field_schema(args[0])}
        return {
            "type": "array",
            "prefixItems": [field_schema(a) for a in args],
            "items": False,
            "minItems": len(args),
        }
    raise TypeError(f"unsupported field type in a generated record: {tp!r}")


def record_schema(record_type: type[Record]) -> dict[str, Any]:
    """One record type as a closed JSON object: every field required, no others allowed."""
    fields = record_type.model_fields
    doc = (record_type.__doc__ or "").strip().splitlines()
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: field_schema(info.annotation) for name, info in fields.items()},
        "required": list(fields),
        "additionalProperties": False,
    }
    if doc:
        schema["description"] = doc[0]
    return schema


def _fact_schema(record_name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "record": {"const": record_name},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "ordered": {"type": "boolean"},
            "sources": {"type": "array", "items": {"$ref": "#/$defs/SourceFile"}},
            "rows": {"type": "array", "items": {"$ref": f"#/$defs/{record_name}"}},
        },
        "required": ["record", "title", "description", "ordered", "sources", "rows"],
        "additionalProperties": False,
    }


def render_json_schema(record_types: Iterable[type[Record]]) -> str:
    """`generated/schema.json`: one `$defs` entry per record type; a fact's `record` names the
    type of its rows (an if/then per record type, so a validator checks the rows once)."""
    types_by_name = {t.__name__: t for t in {*record_types, ExtractionWarning}}
    names = sorted(types_by_name)
    defs: dict[str, Any] = {name: record_schema(types_by_name[name]) for name in names}
    defs["Expression"] = EXPRESSION_SCHEMA
    defs["SourceFile"] = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "blob": {"type": "string"}},
        "required": ["path", "blob"],
        "additionalProperties": False,
    }
    fact_records = [name for name in names if name != "ExtractionWarning"]
    defs["Fact"] = {
        "type": "object",
        "properties": {"record": {"enum": fact_records}},
        "required": ["record"],
        "allOf": [
            {"if": {"properties": {"record": {"const": name}}}, "then": _fact_schema(name)}
            for name in fact_records
        ],
    }
    schema = {
        "$schema": DRAFT,
        "$id": SCHEMA_ID,
        "title": "apron-extract engine constraints",
        "description": (
            "generated/<engine>/constraints.json: the facts of generated/<engine>/*.py with "
            "their provenance. schema_version changes when this layout changes incompatibly."
        ),
        "type": "object",
        "properties": {
            "schema_version": {"const": SCHEMA_VERSION},
            "engine": {"type": "string"},
            "commit": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
            "commit_date": {"type": "string"},
            "upstream_url": {"type": "string"},
            "fact_order": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "facts": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Fact"}},
            "warnings": {"type": "array", "items": {"$ref": "#/$defs/ExtractionWarning"}},
        },
        "required": [
            "schema_version",
            "engine",
            "commit",
            "commit_date",
            "upstream_url",
            "fact_order",
            "facts",
            "warnings",
        ],
        "additionalProperties": False,
        "$defs": defs,
    }
    return json_text(schema)
