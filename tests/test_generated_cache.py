"""The strict loader's cache (apron/generated_cache.py): compiled code and checked rows kept by the
hash of the bytes they were made from; an edit (even one of the same size within the same
second) is never answered from the cache, a damaged or unwritable cache costs only time, and
rows rebuilt from the cache equal the rows the module's own code builds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from apron import constraints, generated_cache
from apron.constraints import ConstraintsError, load_engine

GENERATED = Path(__file__).resolve().parent.parent / "generated"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder, and no module shared from an earlier load in this process."""
    monkeypatch.setenv("APRON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(constraints, "_LOADED", {})
    return tmp_path / "cache" / generated_cache.FOLDER


@pytest.fixture
def copy(tmp_path) -> Path:
    target = tmp_path / "generated"
    shutil.copytree(GENERATED, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def rows_of(directory: Path, engine: str, fact: str) -> tuple:
    return load_engine(engine, directory).rows(fact)


def new_process(monkeypatch) -> None:
    """Forget what this process loaded, as a new interpreter would."""
    monkeypatch.setattr(constraints, "_LOADED", {})


def modules_run(monkeypatch) -> list[str]:
    """The names of the generated files the loader runs from now on, in order."""
    ran: list[str] = []
    real_run = constraints._run
    monkeypatch.setattr(
        constraints,
        "_run",
        lambda name, path, *rest: ran.append(path.name) or real_run(name, path, *rest),
    )
    return ran


def test_a_load_keeps_code_and_checked_rows_named_by_the_hash_of_the_bytes(cache, copy):
    rows_of(copy, "vllm", "mla_model_types")
    source = (copy / "vllm" / "mla_model_types.py").read_bytes()
    name = generated_cache.digest(source).hex()
    kept = sorted(p.name.split(".")[-1] for p in cache.glob(f"{name}*"))
    assert kept == ["pyc", "rows"]


def test_rows_rebuilt_from_the_cache_equal_the_executed_rows(cache, copy, monkeypatch):
    executed = rows_of(copy, "llamacpp", "tensor_shapes")
    new_process(monkeypatch)
    ran = modules_run(monkeypatch)
    monkeypatch.setattr(constraints, "_checked_rows", None)  # neither run nor checked again
    rebuilt = rows_of(copy, "llamacpp", "tensor_shapes")
    assert sorted(ran) == ["__init__.py", "schema.py"]  # not tensor_shapes.py
    assert rebuilt == executed and rebuilt is not executed
    assert {type(r).__name__ for r in rebuilt} == {"TensorShape"}
    engine = load_engine("llamacpp", copy)
    schema = constraints.engine_directory(engine).schema()
    assert all(type(row) is schema.TensorShape for row in rebuilt)
    module, _ = constraints.engine_directory(engine).fact_module("tensor_shapes")
    assert module.FACT == "tensor_shapes" and module.SOURCES[0][0] == "src/llama-arch.cpp"


def test_an_edit_of_the_same_size_in_the_same_second_is_read_anew(cache, copy, monkeypatch):
    module = copy / "vllm" / "mla_model_types.py"
    assert [r.model_type for r in rows_of(copy, "vllm", "mla_model_types")].count("deepseek_v3")
    stat = module.stat()
    text = module.read_text()
    module.write_text(text.replace('model_type="deepseek_v3"', 'model_type="deepseek_v9"', 1))
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime
    assert module.stat().st_size == stat.st_size
    new_process(monkeypatch)
    assert "deepseek_v9" in [r.model_type for r in rows_of(copy, "vllm", "mla_model_types")]


def test_a_module_that_no_longer_checks_is_refused_after_a_kept_load(cache, copy, monkeypatch):
    rows_of(copy, "vllm", "mla_model_types")
    module = copy / "vllm" / "mla_model_types.py"
    module.write_text(module.read_text().replace('scope="main"', "scope=1", 1))
    new_process(monkeypatch)
    with pytest.raises(ConstraintsError, match=r"row \d+, field 'scope': 1 is not str"):
        rows_of(copy, "vllm", "mla_model_types")


def test_a_schema_edit_checks_the_rows_again(cache, copy, monkeypatch):
    rows_of(copy, "vllm", "mla_model_types")
    schema = copy / "schema.py"
    text = schema.read_text()
    block = text[text.index("class MlaModelType(Record):") :].split("\n\n\n", 1)[0]
    schema.write_text(text.replace(block, block.replace("    scope: str\n", "    scope: int\n")))
    new_process(monkeypatch)
    with pytest.raises(ConstraintsError, match="field 'scope'"):
        rows_of(copy, "vllm", "mla_model_types")


def test_a_damaged_cache_entry_is_made_again(cache, copy, monkeypatch):
    executed = rows_of(copy, "vllm", "kv_head_aliases")
    for entry in cache.iterdir():
        entry.write_bytes(entry.read_bytes()[:20] + b"\x00garbage")
    new_process(monkeypatch)
    assert rows_of(copy, "vllm", "kv_head_aliases") == executed
    new_process(monkeypatch)
    monkeypatch.setattr(constraints, "_checked_rows", None)  # rewritten whole: read back
    assert rows_of(copy, "vllm", "kv_head_aliases") == executed


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path, copy, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("APRON_CACHE_DIR", str(blocker))
    monkeypatch.setattr(constraints, "_LOADED", {})
    assert rows_of(copy, "vllm", "kv_head_aliases")


def test_the_cache_keeps_at_most_its_limit(cache, copy, monkeypatch):
    monkeypatch.setattr(generated_cache, "KEPT", 3)
    engine = load_engine("vllm", copy)
    for fact in list(engine.facts)[:4]:
        engine.rows(fact)
    assert len(list(cache.iterdir())) <= 3


def config_classes_of(directory: Path):
    """The configuration classes a fresh constraint set reads from `directory`."""
    return constraints.load_constraints(directory).config_classes()


def every_class(classes) -> dict:
    return {
        (origin, name): tables.classes[name]
        for origin, tables in (("transformers", classes.transformers), ("vllm", classes.vllm))
        for name in tables.classes
    }


def test_config_classes_kept_by_class_equal_the_classes_the_module_builds(cache, copy, monkeypatch):
    from apron import normalize

    module = constraints._execute(copy / "transformers" / "config_classes.py", None)
    vllm = constraints._execute(copy / "transformers" / "vllm_config_classes.py", None)
    whole = every_class(normalize.ConfigClasses.from_modules(module, vllm, frozenset()))
    assert len(whole) > 600
    first = every_class(config_classes_of(copy))  # made from the modules, and kept
    new_process(monkeypatch)
    ran = modules_run(monkeypatch)
    kept = every_class(config_classes_of(copy))
    assert "config_classes.py" not in ran and "vllm_config_classes.py" not in ran
    assert list(kept) == list(first) == list(whole)
    assert kept == first == whole
    assert kept[("transformers", "Qwen3Config")].defaults["head_dim"] == (128, True)


def test_a_class_read_from_the_cache_is_decoded_alone(cache, copy, monkeypatch):
    config_classes_of(copy)
    new_process(monkeypatch)
    decoded: list[int] = []
    real = generated_cache.decoded
    monkeypatch.setattr(generated_cache, "decoded", lambda b: decoded.append(1) or real(b))
    classes = config_classes_of(copy)
    assert classes.class_for("qwen3").name == "Qwen3Config"
    assert 1 <= len(decoded) <= 3  # the class and its bases, not hundreds


def test_a_damaged_class_entry_is_read_from_the_module(cache, copy, monkeypatch):
    expected = config_classes_of(copy).class_for("qwen3")
    new_process(monkeypatch)
    monkeypatch.setattr(generated_cache, "decoded", lambda encoded: None)
    assert config_classes_of(copy).class_for("qwen3") == expected


def test_an_edited_config_classes_module_is_read_anew(cache, copy, monkeypatch):
    assert config_classes_of(copy).class_for("qwen3").defaults["head_dim"] == (128, True)
    module = copy / "transformers" / "config_classes.py"
    text = module.read_text()
    line = next(x for x in text.splitlines() if x.startswith('    ("Qwen3Config", "head_dim", 128'))
    module.write_text(text.replace(line, line.replace("128", "256"), 1))
    new_process(monkeypatch)
    assert config_classes_of(copy).class_for("qwen3").defaults["head_dim"] == (256, True)
