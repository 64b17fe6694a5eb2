"""SGLang registry rows: EntryClass resolution through classes, aliases and imports."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError, ParseError
from apron.extractors.runner.base import extract_engine
from apron.extractors.sglang.registry_rows import (
    may_assign_entry,
    models_registry,
    registry_rows,
    scan_module,
)
from apron.extractors.snapshot import MemorySnapshot
from tests.sglang_miniatures import MODELS, NEXTN_IMPL_PATH, full_tree_2026, models_tree

SGLANG = ENGINES["sglang"]


def registry(files):
    facts = extract_engine(
        SGLANG,
        MemorySnapshot(files, engine="sglang"),
        commit_date="2026-01-01",
        only={"registry_rows"},
    )
    return {r.architecture: r for r in facts.fact("registry_rows").records}, facts


def test_entry_classes_resolve_to_class_names():
    rows, facts = registry(full_tree_2026())
    assert set(rows) == {
        "LlamaForCausalLM",
        "Phi3ForCausalLM",
        "Qwen2ForCausalLM",
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "GemmaForCausalLM",
        "DeepseekV3ForCausalLMNextN",
        "QuantMixtralForCausalLM",
    }
    assert rows["Phi3ForCausalLM"].module == "llama"
    assert rows["Qwen2ForCausalLM"].resolved_via == "class"  # BOM-prefixed module parses
    assert facts.warnings == ()


def test_alias_entry_registers_the_class_name():
    rows, _ = registry(full_tree_2026())
    gemma = rows["GemmaForCausalLM"]
    assert gemma.entry_name == "Gemma1ForCausalLM" and gemma.class_name == "GemmaForCausalLM"
    assert gemma.resolved_via == "alias Gemma1ForCausalLM = GemmaForCausalLM"
    assert "Gemma1ForCausalLM" not in rows


def test_imported_entry_resolves_in_the_defining_module():
    rows, facts = registry(full_tree_2026())
    nextn = rows["DeepseekV3ForCausalLMNextN"]
    assert nextn.module == "deepseek_nextn" and nextn.entry_name == "NextN"
    assert nextn.class_path == NEXTN_IMPL_PATH
    assert nextn.resolved_via == f"import from {NEXTN_IMPL_PATH}"
    quant = rows["QuantMixtralForCausalLM"]
    assert quant.module == "mixtral_quant" and quant.class_path == f"{MODELS}/quant_base.py"
    # the file outside the scanned folder is a provenance source of the fact
    assert NEXTN_IMPL_PATH in {s.path for s in facts.fact("registry_rows").sources}


def scans(files):
    return {p: scan_module(t, p) for p, t in files.items()}


def no_load(path):
    return None


@pytest.mark.parametrize(
    ("modules", "code", "subject"),
    [
        (
            {
                "a.py": "class XForCausalLM: pass\nEntryClass = XForCausalLM\n",
                "b.py": "class XForCausalLM: pass\nEntryClass = [XForCausalLM]\n",
            },
            "duplicate-architecture",
            "XForCausalLM",
        ),
        (
            {"a.py": "from .gone import Missing\nEntryClass = Missing\n"},
            "unresolved-entry",
            "Missing",
        ),
        (
            {"a.py": "class A: pass\nEntryClass = [A, make_class()]\n"},
            "unparsed-entry",
            "a: make_class()",
        ),
        (
            {
                "a.py": "class A: pass\nif True:\n    EntryClass = A\n",
                "b.py": "class B: pass\nEntryClass = B\n",
            },
            "conditional-entry",
            "a",
        ),
    ],
)
def test_soft_problems_are_warnings(modules, code, subject):
    files = {f"{MODELS}/{name}": text for name, text in modules.items()}
    rows, warnings = registry_rows(scans(files), no_load)
    assert [(w.code, w.subject) for w in warnings] == [(code, subject)]
    if code == "duplicate-architecture":
        assert rows[0].module == "a" and rows[0].also_in == ("b",)
    if code == "unresolved-entry":
        assert rows[0].architecture == "Missing" and rows[0].resolved_via == "unresolved"


def test_alias_cycle_is_unresolved_not_a_hang():
    files = {f"{MODELS}/a.py": "A = B\nB = A\nEntryClass = A\n"}
    rows, warnings = registry_rows(scans(files), no_load)
    assert rows[0].resolved_via == "unresolved" and warnings[0].code == "unresolved-entry"


def test_no_entry_class_anywhere_is_an_anchor_error():
    files = {f"{MODELS}/a.py": "class A: pass\n"}
    with pytest.raises(AnchorError) as err:
        registry_rows(scans(files), no_load)
    assert err.value.anchor == "EntryClass"


def test_missing_models_folder_names_the_paths_tried():
    with pytest.raises(MissingPathError) as err:
        registry({"README.md": "x"})
    assert "python/sglang/srt/models/*.py" in str(err.value)
    assert "engine: sglang" in str(err.value)


def test_malformed_module_is_a_parse_error():
    files = {**models_tree(), f"{MODELS}/broken.py": "class (:\nEntryClass = A\n"}
    with pytest.raises(ParseError) as err:
        registry(files)
    assert f"{MODELS}/broken.py" in str(err.value)


def test_module_without_entry_text_is_not_parsed_but_still_read():
    files = {**models_tree(), f"{MODELS}/helpers.py": "class (:\n"}
    rows, facts = registry(files)
    assert rows == registry(models_tree())[0]
    assert f"{MODELS}/helpers.py" in {s.path for s in facts.fact("registry_rows").sources}
    with pytest.raises(ParseError):
        scan_module(files[f"{MODELS}/helpers.py"], f"{MODELS}/helpers.py")


@pytest.mark.parametrize(
    "text",
    [
        "class A: pass\n",
        "from .base import A\nB = A\nclass EntryPoint: pass\n",
        "def entry_class():\n    return Entryclass\n",
        "ENTRYCLASS = 1\nentryclass = 2\n",
    ],
)
def test_text_the_prefilter_skips_has_no_entry(text):
    assert not may_assign_entry(text)
    scan = scan_module(text, f"{MODELS}/a.py")
    assert scan.entry is None and not scan.nested_entry


@pytest.mark.parametrize(
    ("text", "registered"),
    [
        ('"""EntryClass = B is how SGLang finds a model."""\nclass A: pass\n', set()),
        ("class A: pass\n# EntryClass = A\n", set()),
        ("class A: pass\nclass B: pass\nx = 'EntryClass = B'\nEntryClass = A\n", {"A"}),
        ("class A: pass\ndef f():\n    EntryClass = A\n", set()),
        ("class A: pass\nEntryClass = [A]  # not EntryClass = B\n", {"A"}),
    ],
)
def test_entry_text_in_strings_and_comments_still_parses_right(text, registered):
    files = {**models_tree(), f"{MODELS}/zz_text.py": text}
    assert may_assign_entry(text)
    rows, _ = registry(files)
    assert {a for a, r in rows.items() if r.module == "zz_text"} == registered


def test_skipped_module_is_parsed_when_an_import_leads_to_it():
    base = "class BaseForCausalLM: pass\n"
    user = "from .base import BaseForCausalLM as Entry\nEntryClass = Entry\n"
    files = {**models_tree(), f"{MODELS}/base.py": base, f"{MODELS}/user.py": user}
    rows, facts = registry(files)
    row = rows["BaseForCausalLM"]
    assert (row.module, row.class_path) == ("user", f"{MODELS}/base.py")
    assert row.resolved_via == f"import from {MODELS}/base.py"
    broken = {**files, f"{MODELS}/base.py": "class (:\n"}
    with pytest.raises(ParseError) as err:
        registry(broken)
    assert f"{MODELS}/base.py" in str(err.value)


def test_prefiltered_scan_equals_scanning_every_module():
    files = {
        **{p: t for p, t in full_tree_2026().items() if p.startswith(MODELS + "/")},
        f"{MODELS}/base.py": "class BaseForCausalLM: pass\n",
        f"{MODELS}/user.py": "from .base import BaseForCausalLM\nEntryClass = BaseForCausalLM\n",
        f"{MODELS}/notes.py": "# EntryClass = Nothing\nclass Nothing: pass\n",
    }
    top = {p: t for p, t in files.items() if p.count("/") == MODELS.count("/") + 1}
    every = scans(top)

    def load_every(path):
        return every.get(path) or (scan_module(files[path], path) if path in files else None)

    assert models_registry(top, files.get) == registry_rows(every, load_every)


def test_no_entry_class_error_names_every_module_looked_at():
    texts = {f"{MODELS}/a.py": "class A: pass\n", f"{MODELS}/b.py": "# EntryClass\n"}
    with pytest.raises(AnchorError) as err:
        models_registry(texts, lambda path: None)
    assert list(err.value.paths) == sorted(texts)
