"""vLLM model-class flags: `_ModelInfo.from_model_cls` evaluated statically on miniature trees."""

from __future__ import annotations

import os
import subprocess

import pytest

from apron.extractors.errors import AnchorError
from apron.extractors.vllm.attn_type_rule import attn_type_rule
from apron.extractors.vllm.class_flags import interface_flags_at, model_class_flags
from apron.extractors.vllm.class_tree import ClassInfo, Unresolved, c3_mro
from apron.extractors.vllm.registry_notices import registry_notices
from apron.extractors.vllm.registry_rows import registry_rows
from tests.vllm_class_miniatures import (
    MODEL_CONFIG,
    NEW_ARCH_INIT_ELIF,
    REGISTRY,
    REGISTRY_PATH,
    class_tree,
)


def _run(files: dict[str, str]):
    rows, _ = registry_rows(files[REGISTRY_PATH], REGISTRY_PATH)
    records, interfaces, warnings, paths = model_class_flags(files.get, REGISTRY_PATH, rows)
    return {r.architecture: r for r in records}, interfaces, warnings, paths


@pytest.fixture(scope="module")
def flags():
    return _run(class_tree())


def test_is_hybrid_through_two_levels_of_bases_in_another_module(flags):
    by_arch, _, _, _ = flags
    jamba = by_arch["JambaForCausalLM"]
    assert jamba.is_hybrid is True
    assert jamba.has_inner_state is True
    assert jamba.is_attention_free is False
    assert jamba.class_mro[:3] == (
        "vllm.model_executor.models.jamba.JambaForCausalLM",
        "vllm.model_executor.models.mamba_mixins.HybridStateBase",
        "vllm.model_executor.models.mamba_mixins.HybridBase",
    )
    assert jamba.is_text_generation_model is True  # compute_logits inherited from Llama
    assert jamba.supports_pp is True


def test_adapter_built_class_is_pooling_and_cross_encoder(flags):
    by_arch, _, _, _ = flags
    seq_cls = by_arch["LlamaForSequenceClassification"]
    assert seq_cls.resolved_class == (
        "vllm.model_executor.models.adapters.as_seq_cls_model("
        "vllm.model_executor.models.llama.LlamaForCausalLM).ModelForSequenceClassification"
    )
    assert seq_cls.is_pooling_model is True
    assert seq_cls.score_type == "cross-encoder"  # SupportsCrossEncoding from a local import
    assert seq_cls.attn_type == "decoder"  # VllmModelForPooling's default
    assert seq_cls.supports_lora is True and seq_cls.supports_eagle is True


def test_protocol_check_counts_a_none_data_member_as_present(flags):
    by_arch, _, _, _ = flags
    # SupportsQuant.packed_modules_mapping = None comes first in the MRO; Python's Protocol
    # check on a class only asks hasattr for data members, so LoRA support stands
    quant = by_arch["QuantLlamaForCausalLM"]
    assert quant.class_mro[1] == "vllm.model_executor.models.interfaces.SupportsQuant"
    assert quant.supports_lora is True and quant.supports_quant is True


def test_decorator_sets_attn_type_and_pooling_type(flags):
    by_arch, _, _, _ = flags
    token = by_arch["BertForTokenClassification"]
    assert token.attn_type == "encoder_only"
    assert token.default_seq_pooling_type == "ALL"
    assert token.is_pooling_model is True
    assert token.is_text_generation_model is False
    seq = by_arch["BertForSequenceClassification"]
    assert seq.default_seq_pooling_type == "CLS"  # below a decorator the tree does not define
    assert seq.score_type == "cross-encoder"
    assert seq.supports_quant is True and token.supports_quant is False


def test_flag_set_by_plain_assignment(flags):
    by_arch, _, _, _ = flags
    mamba = by_arch["MambaForCausalLM"]
    assert mamba.is_attention_free is True
    assert mamba.has_inner_state is True
    assert mamba.is_hybrid is False
    assert mamba.is_text_generation_model is True
    assert mamba.supports_pp is False  # no SupportsPP, no intermediate_tensors
    assert mamba.supports_lora is False


def test_unresolvable_base_is_a_warning_and_unknown_flags(flags):
    by_arch, _, warnings, _ = flags
    broken = by_arch["BrokenForCausalLM"]
    assert broken.status == "resolved"
    assert broken.is_hybrid is None and broken.attn_type is None
    warning = next(w for w in warnings if w.subject == "BrokenForCausalLM")
    assert warning.code == "unknown-flag"
    assert "vanished" in warning.message
    gone = by_arch["GoneForCausalLM"]
    assert gone.status == "unresolved" and gone.is_text_generation_model is None
    unresolved = next(w for w in warnings if w.subject == "GoneForCausalLM")
    assert unresolved.code == "unresolved-class"
    assert "vllm.model_executor.models.gone has no file" in unresolved.message


def test_dotted_module_with_conditional_reexport(flags):
    by_arch, _, _, paths = flags
    new = by_arch["NewArchForCausalLM"]
    assert new.resolved_class == "vllm.models.new_arch.cuda.model.NewArchForCausalLM"
    assert new.path == "vllm/models/new_arch/cuda/model.py"
    # supports_pp() is `isinstance(model, _SupportsPPType)`: Python's Protocol check on a class
    # object tests presence only, so a plain `supports_pp = False` does not switch it off
    assert new.supports_pp is True
    assert "vllm/models/new_arch/rocm/model.py" not in paths


def test_platform_chain_takes_the_cuda_branch():
    files = {**class_tree(), "vllm/models/new_arch/__init__.py": NEW_ARCH_INIT_ELIF}
    by_arch, _, _, paths = _run(files)
    new = by_arch["NewArchForCausalLM"]
    assert new.resolved_class == "vllm.models.new_arch.cuda.model.NewArchForCausalLM"
    assert not any("rocm" in p or "xpu" in p for p in paths)


def test_interface_flag_map_is_extracted():
    found = {
        (f.protocol, f.attribute): f.value
        for f in interface_flags_at(class_tree().get, REGISTRY_PATH)
    }
    assert found[("IsHybrid", "is_hybrid")] == "True"
    assert found[("SupportsCrossEncoding", "score_type")] == '"cross-encoder"'
    assert found[("VllmModelForPooling", "attn_type")] == '"decoder"'
    assert ("_SupportsPPType", "supports_pp") not in found  # annotated, no value


def test_renamed_flag_in_interfaces_changes_the_result():
    files = class_tree()
    files["vllm/model_executor/models/interfaces.py"] = files[
        "vllm/model_executor/models/interfaces.py"
    ].replace('getattr(model, "is_hybrid", False)', 'getattr(model, "is_hybrid_model", False)')
    by_arch, _, _, _ = _run(files)
    assert by_arch["JambaForCausalLM"].is_hybrid is False


def test_cyclic_aliases_and_inheritance_are_unresolved_not_a_crash():
    files = class_tree()
    files["vllm/model_executor/models/mamba.py"] = (
        "MambaForCausalLM = OtherName\nOtherName = MambaForCausalLM\n"
    )
    files["vllm/model_executor/models/jamba.py"] = (
        "from .jamba import JambaForCausalLM as Base\n\n\nclass JambaForCausalLM(Base):\n    pass\n"
    )
    by_arch, _, warnings, _ = _run(files)
    assert by_arch["MambaForCausalLM"].status == "unresolved"
    assert (
        "in terms of itself" in next(w for w in warnings if w.subject == "MambaForCausalLM").message
    )
    assert by_arch["JambaForCausalLM"].is_hybrid is None


def test_missing_model_info_is_an_anchor_error():
    files = class_tree()
    files[REGISTRY_PATH] = REGISTRY.replace("def from_model_cls", "def from_cls")
    with pytest.raises(AnchorError, match="_ModelInfo.from_model_cls"):
        _run(files)


def test_mro_is_c3():
    def cls(name, *bases):
        return ClassInfo(qualname=f"m.{name}", module="m", path="m.py", bases=list(bases))

    o = cls("O")
    a, b = cls("A", o), cls("B", o)
    c = cls("C", a, b)
    assert [k.name for k in c3_mro(c)] == ["C", "A", "B", "O"]
    with pytest.raises(Unresolved, match="consistent"):
        c3_mro(cls("D", o, a))  # Python: Cannot create a consistent method resolution order


def test_registry_notices():
    notices, warnings = registry_notices(REGISTRY, REGISTRY_PATH)
    assert [(n.kind, n.architecture, n.detail) for n in notices] == [
        ("out-of-tree", "BartForConditionalGeneration", "https://github.com/example/bart-plugin"),
        ("previously-supported", "MllamaForConditionalGeneration", "0.10.2"),
        ("previously-supported", "MotifForCausalLM", "0.10.2"),
    ]
    assert warnings == []
    notices, warnings = registry_notices(
        REGISTRY.replace("_OOT_SUPPORTED_MODELS", "_PLUGINS"), REGISTRY_PATH
    )
    assert {n.kind for n in notices} == {"previously-supported"}
    assert [(w.code, w.subject) for w in warnings] == [("absent", "_OOT_SUPPORTED_MODELS")]


def test_attn_type_rule_from_model_config():
    rule = attn_type_rule(MODEL_CONFIG, "vllm/config/model.py")
    assert rule.encoder_only_seq_pooling_types == ("CLS",)
    assert (rule.causal_key, rule.causal_default) == ("is_causal", "True")
    assert rule.branches == (
        "pooler_config -> pooling rule",
        "is_hybrid -> hybrid",
        "else -> decoder",
    )
    with pytest.raises(AnchorError, match="ModelConfig.attn_type"):
        attn_type_rule(
            MODEL_CONFIG.replace("def attn_type", "def attention"), "vllm/config/model.py"
        )


PIN = "9aaf83ef502fc37bc647f6e474314d48ba36cd1c"


@pytest.mark.real_mirror
@pytest.mark.skipif(not os.environ.get("APRON_MIRROR_VLLM"), reason="APRON_MIRROR_VLLM unset")
def test_real_vllm_flags_at_the_pin():
    mirror = os.environ["APRON_MIRROR_VLLM"]
    listing = subprocess.run(
        ["git", "-C", mirror, "ls-tree", "-r", "--name-only", PIN, "vllm"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    present = set(listing)

    def read(path):
        if path not in present:
            return None
        return subprocess.run(
            ["git", "-C", mirror, "show", f"{PIN}:{path}"], capture_output=True, text=True
        ).stdout

    rows, _ = registry_rows(read(REGISTRY_PATH), REGISTRY_PATH)
    records, interfaces, warnings, _ = model_class_flags(read, REGISTRY_PATH, rows)
    by_arch = {r.architecture: r for r in records}
    assert len(records) == len(rows)
    assert all(r.status == "resolved" for r in records)
    assert by_arch["BertModel"].default_seq_pooling_type == "CLS"
    assert by_arch["BertForTokenClassification"].attn_type == "encoder_only"
    assert by_arch["JambaForCausalLM"].is_hybrid is True
    assert by_arch["MambaForCausalLM"].is_attention_free is True
    assert by_arch["Qwen2VLForConditionalGeneration"].supports_multimodal is True
    assert by_arch["WhisperForConditionalGeneration"].supports_transcription is True
    assert by_arch["LlamaBidirectionalForSequenceClassification"].score_type == "cross-encoder"
    assert by_arch["DeepseekV4ForCausalLM"].resolved_class.startswith("vllm.models.deepseek_v4.")
    assert by_arch["TransformersForCausalLM"].supports_lora is True  # Base has SupportsLoRA
    assert by_arch["Qwen3NextForCausalLM"].supports_mamba_prefix_caching is False
    assert by_arch["Terratorch"].attn_type == "attention_free"
    assert by_arch["ColBERTModernBertModel"].score_type == "late-interaction"
    assert warnings == []
    assert ("IsHybrid", "is_hybrid") in {(f.protocol, f.attribute) for f in interfaces}


def test_compiled_flag_functions_answer_per_class_and_per_function():
    # Each function body is compiled once and run for every class; two functions of one
    # module are read from their own spans (both start at byte 0 there) and must not share
    # their memo.
    from apron.extractors.vllm.class_tree import ClassTree
    from apron.extractors.vllm.flag_eval import ClassValue, FlagEvaluator, Unknown

    text = (
        "class P:\n    flag = True\n\n\nclass Q:\n    flag = False\n\n\n"
        "class R(Missing):\n    pass\n\n\n"
        "def says(model):\n    if getattr(model, 'flag', False):\n        return 'yes'\n"
        "    return 'no'\n\n\n"
        "def denies(model):\n    return not getattr(model, 'flag', False)\n"
    )
    tree = ClassTree({"vllm/m.py": text}.get)
    evaluator = FlagEvaluator(tree)
    mod = tree.module("vllm.m")
    says, denies = (tree.full_definition(mod, mod.bindings[n].node) for n in ("says", "denies"))

    def run(function, cls):
        return evaluator.call_function(mod, function, [ClassValue(tree.resolve("vllm.m", cls))], 0)

    assert [run(says, c) for c in ("P", "Q", "P")] == ["yes", "no", "yes"]
    assert [run(denies, c) for c in ("P", "Q")] == [False, True]
    unknown = run(says, "R")
    assert isinstance(unknown, Unknown) and "Missing" in unknown.reason


def _evaluator_over(files: dict[str, str]):
    from apron.extractors.vllm.class_tree import ClassTree
    from apron.extractors.vllm.flag_eval import FlagEvaluator

    tree = ClassTree(files.get)
    return tree, FlagEvaluator(tree)


def _function(tree, module: str, name: str):
    mod = tree.module(module)
    return mod, tree.full_definition(mod, mod.bindings[name].node)


def test_call_memo_keeps_apart_a_class_and_a_string_of_its_name_and_two_strings():
    from apron.extractors.vllm.flag_eval import ClassValue

    text = (
        "class P:\n    flag = True\n    other = 'x'\n\n\n"
        "def is_type(value):\n    return isinstance(value, type)\n\n\n"
        "def read(model, name):\n    return getattr(model, name, 'none')\n"
    )
    tree, evaluator = _evaluator_over({"vllm/m.py": text})
    p = ClassValue(tree.resolve("vllm.m", "P"))
    mod, is_type = _function(tree, "vllm.m", "is_type")
    _, read = _function(tree, "vllm.m", "read")
    assert evaluator.call_function(mod, is_type, [p], 0) is True
    assert evaluator.call_function(mod, is_type, ["vllm.m.P"], 0) is False
    answers = [evaluator.call_function(mod, read, [p, n], 0) for n in ("flag", "other", "gone")]
    assert answers == [True, "x", "none"]


def test_same_global_name_in_two_modules_is_two_classes():
    a = "class Flag:\n    value = 'a'\n\n\ndef read():\n    return Flag.value\n"
    b = "class Flag:\n    value = 'b'\n\n\ndef read():\n    return Flag.value\n"
    tree, evaluator = _evaluator_over({"vllm/a.py": a, "vllm/b.py": b})
    (mod_a, read_a), (mod_b, read_b) = (_function(tree, m, "read") for m in ("vllm.a", "vllm.b"))
    assert not tree.resolving
    answers = [evaluator.call_function(m, f, [], 0) for m, f in ((mod_a, read_a), (mod_b, read_b))]
    assert answers == ["a", "b"]
    assert evaluator._global(mod_a, "Flag") != evaluator._global(mod_b, "Flag")


def test_unresolved_global_stays_unknown_and_is_not_kept():
    from apron.extractors.vllm.flag_eval import Unknown

    text = "def read():\n    return Missing.value\n"
    tree, evaluator = _evaluator_over({"vllm/m.py": text})
    mod, read = _function(tree, "vllm.m", "read")
    first = evaluator._global(mod, "Missing")
    assert isinstance(first, Unknown) and "Missing" in first.reason
    assert evaluator._globals == {}


def test_isinstance_against_two_protocols_checks_each_ones_members():
    from apron.extractors.vllm.flag_eval import ClassValue

    text = (
        "from typing import ClassVar, Protocol, runtime_checkable\n\n\n"
        "@runtime_checkable\nclass HasX(Protocol):\n    x: ClassVar[bool] = True\n\n\n"
        "@runtime_checkable\nclass HasY(Protocol):\n    y: ClassVar[bool] = True\n\n\n"
        "class OnlyX:\n    x = False\n\n\n"
        "def both(model):\n    return (isinstance(model, HasX), isinstance(model, HasY))\n"
    )
    tree, evaluator = _evaluator_over({"vllm/m.py": text})
    mod, both = _function(tree, "vllm.m", "both")
    only_x = ClassValue(tree.resolve("vllm.m", "OnlyX"))
    has_y = ClassValue(tree.resolve("vllm.m", "HasY"))
    assert evaluator.call_function(mod, both, [only_x], 0) == (True, False)
    assert evaluator.call_function(mod, both, [has_y], 0) == (False, True)


def test_single_return_bodies_and_bodies_without_a_return():
    from apron.extractors.vllm.flag_eval import ClassValue, Unknown

    text = (
        "class P:\n    flag = True\n\n\n"
        "def documented(model):\n    '''Says the flag.'''\n    return getattr(model, 'flag')\n\n\n"
        "def bare(model):\n    return\n\n\n"
        "def silent(model):\n    pass\n\n\n"
        "def guarded(model):\n    if getattr(model, 'flag'):\n        return 'on'\n"
        "    return getattr(model, 'gone')\n"
    )
    tree, evaluator = _evaluator_over({"vllm/m.py": text})
    p = ClassValue(tree.resolve("vllm.m", "P"))
    answers = {}
    for name in ("documented", "bare", "silent", "guarded"):
        mod, function = _function(tree, "vllm.m", name)
        answers[name] = evaluator.call_function(mod, function, [p], 0)
    assert answers == {"documented": True, "bare": None, "silent": None, "guarded": "on"}
    mod, function = _function(tree, "vllm.m", "documented")
    gone = evaluator.call_function(mod, function, ["not a class"], 0)
    assert isinstance(gone, Unknown) and "non-class" in gone.reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # vLLM after the pin (adapters.py): a type-checker comment inside the base list
        (
            "    class ModelForSequenceClassification(_create_pooling_model_cls(cls), "
            "SupportsCrossEncoding):",
            "    class ModelForSequenceClassification(  # type: ignore[misc]\n"
            "        _create_pooling_model_cls(cls),  # the pooling base\n"
            "        SupportsCrossEncoding,  # type: ignore[misc]\n"
            "    ):",
        ),
        (
            "class BertForSequenceClassification(nn.Module, SupportsCrossEncoding, SupportsQuant):",
            "class BertForSequenceClassification(\n    nn.Module,  # noqa: E501\n"
            "    (SupportsCrossEncoding),\n    SupportsQuant,\n):",
        ),
    ],
)
def test_comments_and_brackets_in_a_base_list_change_no_flag(flags, old, new):
    files = class_tree()
    changed = {path: text.replace(old, new) for path, text in files.items()}
    assert changed != files
    by_arch, interfaces, warnings, _ = _run(changed)
    before, before_interfaces, before_warnings, _ = flags
    assert by_arch == before and interfaces == before_interfaces and warnings == before_warnings
    assert by_arch["LlamaForSequenceClassification"].score_type == "cross-encoder"
    assert by_arch["BertForSequenceClassification"].score_type == "cross-encoder"
