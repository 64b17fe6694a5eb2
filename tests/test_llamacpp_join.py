"""llama.cpp: the HF architecture -> converter class -> GGUF name -> LLM_ARCH -> class sets join,
in both converter layouts (one script; the conversion/ package)."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError, ParseError
from apron.extractors.llamacpp import converter
from apron.extractors.parsing.python_ts import parse_tree
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot
from tests.llamacpp_miniatures import CONSTANTS, PACKAGE_INIT, SCRIPT, tree_v1, tree_v2

LLAMACPP = ENGINES["llamacpp"]


def extract(files):
    snapshot = MemorySnapshot({k: v for k, v in files.items() if v is not None}, engine="llamacpp")
    return extract_engine(LLAMACPP, snapshot, commit_date="2026-05-16")


def join_rows(files):
    facts = extract(files)
    rows = {(r.architecture, r.model_type): r for r in facts.fact("hf_architectures").records}
    warnings = [w for w in facts.warnings if w.fact == "hf_architectures"]
    return rows, warnings


def comparable(rows):
    """The join without the file each class lives in (which is what the layouts change)."""
    return {key: row.model_copy(update={"path": ""}) for key, row in rows.items()}


@pytest.mark.parametrize("tree", [tree_v1, tree_v2], ids=["script", "package"])
def test_join_resolves_through_to_class_sets(tree):
    rows, _ = join_rows(tree())
    jamba = rows[("JambaForCausalLM", "text")]
    assert (jamba.converter_class, jamba.model_arch, jamba.gguf_arch, jamba.llm_arch) == (
        "JambaModel",
        "JAMBA",
        "jamba",
        "LLM_ARCH_JAMBA",
    )
    assert jamba.properties == ("llm_arch_is_hybrid",)  # sm_tensor lists it as false
    assert rows[("DeepseekV3ForCausalLM", "text")].properties == ()
    assert "llm_arch_is_hybrid" in rows[("Qwen3NextForCausalLM", "text")].properties
    # one registration naming several HF architectures
    assert rows[("LlamaForCausalLM", "text")].converter_class == "LlamaModel"
    assert rows[("MistralForCausalLM", "text")].llm_arch == "LLM_ARCH_LLAMA"


@pytest.mark.parametrize("tree", [tree_v1, tree_v2], ids=["script", "package"])
def test_inherited_model_arch(tree):
    rows, _ = join_rows(tree())
    variant = rows[("MyLlamaVariantForCausalLM", "text")]
    assert (variant.converter_class, variant.model_arch_from, variant.gguf_arch) == (
        "LlamaVariantModel",
        "LlamaModel",
        "llama",
    )
    # the projector inherits MMPROJ (in the package: from conversion/base.py, another module),
    # so it is registered as a projector, beside the text model of the same HF architecture
    vision = rows[("Gemma2ForCausalLM", "mmproj")]
    assert (vision.model_arch, vision.model_arch_from, vision.gguf_arch, vision.llm_arch) == (
        "MMPROJ",
        "MmprojModel",
        "clip",
        "LLM_ARCH_CLIP",
    )
    assert rows[("Gemma2ForCausalLM", "text")].gguf_arch == "gemma2"


def test_both_layouts_give_the_same_join():
    old, old_warnings = join_rows(tree_v1())
    new, new_warnings = join_rows(tree_v2())
    # v2 adds rs_rollback (QWEN3NEXT); everything else is identical
    qwen = ("Qwen3NextForCausalLM", "text")
    assert new[qwen].properties == (
        *old[qwen].properties[:1],
        "llm_arch_supports_rs_rollback",
        *old[qwen].properties[1:],
    )
    old.pop(qwen), new.pop(qwen)
    assert comparable(old) == comparable(new)
    assert {w.subject for w in old_warnings} == {w.subject for w in new_warnings}
    assert new[("LlamaForCausalLM", "text")].path == "conversion/llama.py"
    assert old[("LlamaForCausalLM", "text")].path == SCRIPT


def test_unresolvable_rows_are_warnings_with_reasons():
    rows, warnings = join_rows(tree_v2())
    novel = rows[("NovelForCausalLM", "text")]
    assert novel.gguf_arch == "novel" and novel.llm_arch == ""
    assert "no LLM_ARCH_NAMES entry" in novel.resolution
    audio = rows[("AudioOnlyModel", "text")]
    assert "raises unconditionally" in audio.resolution and audio.properties == ()
    unresolved = {w.subject for w in warnings if w.code == "unresolved"}
    assert unresolved == {"NovelForCausalLM/text", "AudioOnlyModel/text"}
    resolved = sum(r.resolution == "resolved" for r in rows.values())
    assert (resolved, len(rows)) == (11, 13)


def test_runtime_switches_of_model_arch_are_recorded():
    rows, _ = join_rows(tree_v2())
    assert rows[("BertModel", "text")].runtime_gguf_archs == ("dream",)
    assert rows[("LlamaForCausalLM", "text")].runtime_gguf_archs == ()


def test_routing_map_inconsistencies():
    files = tree_v2()
    files["conversion/__init__.py"] = PACKAGE_INIT.replace(
        '    "JambaForCausalLM": "jamba",\n', ""
    ).replace(
        '    "NovelForCausalLM": "novel",\n',
        '    "NovelForCausalLM": "novel",\n    "PhantomForCausalLM": "llama",\n',
    )
    rows, warnings = join_rows(files)
    assert any(w.code == "unrouted" and w.subject == "JambaForCausalLM/text" for w in warnings)
    phantom = rows[("PhantomForCausalLM", "text")]
    assert phantom.resolution.startswith("TEXT_MODEL_MAP routes it to conversion/llama.py")
    assert any(w.code == "unresolved" and w.subject == "PhantomForCausalLM/text" for w in warnings)


def test_duplicate_registration_prefers_the_routed_module():
    files = tree_v2()
    files["conversion/jamba.py"] += """

@ModelBase.register("LlamaForCausalLM")
class NotTheLlama(TextModel):
    model_arch = gguf.MODEL_ARCH.JAMBA
"""
    rows, warnings = join_rows(files)
    assert rows[("LlamaForCausalLM", "text")].converter_class == "LlamaModel"
    assert any(
        w.code == "registered-twice" and w.subject == "LlamaForCausalLM/text" for w in warnings
    )


def test_script_layout_later_registration_wins():
    files = tree_v1()
    files[SCRIPT] += """

@ModelBase.register("JambaForCausalLM")
class JambaModelV2(TextModel):
    model_arch = gguf.MODEL_ARCH.MAMBA
"""
    rows, warnings = join_rows(files)
    assert rows[("JambaForCausalLM", "text")].converter_class == "JambaModelV2"
    assert rows[("JambaForCausalLM", "text")].properties == ("llm_arch_is_recurrent",)
    assert any(w.code == "registered-twice" for w in warnings)


def test_model_arch_that_is_not_a_literal_is_unresolved():
    files = tree_v1()
    files[SCRIPT] += """

@ModelBase.register("DynamicForCausalLM")
class DynamicModel(TextModel):
    model_arch = pick_arch()
"""
    rows, warnings = join_rows(files)
    row = rows[("DynamicForCausalLM", "unknown")]
    assert row.model_arch == "" and "pick_arch()" in row.resolution
    assert any(w.subject == "DynamicForCausalLM/unknown" for w in warnings)


# ---------------------------------------------------------------- the class index


def index_of(modules: dict[str, str]) -> converter.ConverterIndex:
    counter, warnings = [0], []
    parsed = [
        converter.read_module(
            text, f"conversion/{name}.py", f"conversion.{name}", counter, warnings
        )
        for name, text in modules.items()
    ]
    return converter.ConverterIndex(parsed)


def test_nested_delegate_classes_and_aliases_across_modules():
    index = index_of(
        {
            "base": "import gguf\n\nclass ModelBase:\n    pass\n\nclass TextModel(ModelBase):\n    pass\n",
            "llama": (
                "from .base import ModelBase, TextModel, gguf\n\n"
                "class LlamaModel(TextModel):\n    model_arch = gguf.MODEL_ARCH.LLAMA\n"
            ),
            "mistral": (
                "from .base import ModelBase, TextModel, gguf\n"
                "from .llama import LlamaModel as Base\n\n"
                '@ModelBase.register("Mistral3ForConditionalGeneration")\n'
                "class Mistral3Model(TextModel):\n"
                "    class Inner4(Base):\n"
                "        model_arch = gguf.MODEL_ARCH.MISTRAL4\n"
                "\n"
                "    model_arch = gguf.MODEL_ARCH.MISTRAL3  # unused\n"
                "\n"
                "    def __init__(self, *args, **kwargs):\n"
                "        if self.hparams.get('model_type') == 'mistral4':\n"
                "            self.impl = Mistral3Model.Inner4(*args, **kwargs)\n"
            ),
        }
    )
    [registration] = converter.registrations(index)
    assert registration.model_arch == "MISTRAL3" and registration.runtime_archs == ("MISTRAL4",)
    inner = index.modules["conversion.mistral"].classes["Mistral3Model.Inner4"]
    assert [c.qualname for c in index.mro(inner)] == [
        "Mistral3Model.Inner4",
        "LlamaModel",
        "TextModel",
        "ModelBase",
    ]


def test_annotation_only_is_not_a_model_arch_and_c3_order_is_used():
    index = index_of(
        {
            "m": (
                "import gguf\n\n"
                "class A:\n    model_arch: gguf.MODEL_ARCH\n\n"
                "class B(A):\n    model_arch = gguf.MODEL_ARCH.BEE\n\n"
                "class C(A):\n    model_arch = gguf.MODEL_ARCH.SEA\n\n"
                '@ModelBase.register("D")\nclass D(C, B):\n    pass\n'
            ),
        }
    )
    [registration] = converter.registrations(index)
    assert (registration.model_arch, registration.model_arch_from) == ("SEA", "C")
    cls = index.modules["conversion.m"].classes["D"]
    assert [c.qualname for c in index.mro(cls)] == ["D", "C", "B", "A"]


SCANNED_METHODS = (
    "from .base import ModelBase, TextModel, gguf\n"
    "from .llama import LlamaModel\n\n"
    '@ModelBase.register("Switching")\n'
    "class Switching(TextModel):\n"
    "    model_arch = gguf.MODEL_ARCH.BASE\n"
    "\n"
    "    def set_gguf_parameters(self):\n"
    "        arch = gguf.MODEL_ARCH.LATE\n"
    "        self . model_arch = arch\n"
    "\n"
    "    def modify_tensors(self, data):\n"
    "        self.parts: list = (\n"
    "            LlamaModel(data))\n"
    "\n"
    "    def set_vocab(self):\n"
    "        self.vocab = 3  # no call: nothing to read, the body is elided\n"
    "        raise ValueError('not an __init__')\n"
    "\n"
    '@ModelBase.register("Refusing")\n'
    "class Refusing(TextModel):\n"
    "    model_arch = gguf.MODEL_ARCH.BASE\n"
    "\n"
    "    def __init__(self, *args):\n"
    "        raise NotImplementedError('refused')\n"
)


def test_methods_the_scan_reads_keep_their_bodies_and_others_are_elided():
    kept = converter.method_skeleton(SCANNED_METHODS, keep=converter._method_scanned)
    assert "self . model_arch = arch" in kept and "LlamaModel(data))" in kept
    assert "raise NotImplementedError" in kept and "self.vocab = 3" not in kept
    index = index_of(
        {
            "base": "import gguf\n\nclass ModelBase:\n    pass\n\nclass TextModel(ModelBase):\n"
            "    pass\n",
            "llama": "from .base import TextModel, gguf\n\nclass LlamaModel(TextModel):\n"
            "    model_arch = gguf.MODEL_ARCH.LLAMA\n",
            "switch": SCANNED_METHODS,
        }
    )
    switching = index.modules["conversion.switch"].classes["Switching"]
    assert switching.runtime_archs == ("LATE",) and switching.delegates == ("LlamaModel",)
    assert index.modules["conversion.switch"].classes["Refusing"].init_raises
    registration = next(r for r in converter.registrations(index) if r.architecture == "Switching")
    assert registration.runtime_archs == ("LATE", "LLAMA")


def test_a_method_with_a_triple_quote_in_a_one_line_string_is_kept_whole():
    # the line-based pass takes `\'\"\"\"\'` for a string running to the end of the file
    text = (
        "class Vocab(TextModel):\n"
        "    def set_vocab(self):\n"
        '        sample = \'"""\'\n'
        "\n"
        "class After(Vocab):\n"
        "    pass\n"
    )
    assert converter.method_skeleton(text, keep=lambda definition: False).count("class") == 1
    assert converter.method_skeleton(text, keep=converter._method_scanned) == text
    module = converter.read_module(text, "conversion/s.py", "conversion.s", [0], [])
    assert list(module.classes) == ["Vocab", "After"]


@pytest.mark.parametrize(
    ("method", "kept"),
    [
        ('    def f(self):\n        """Doc."""\n        return 1\n', False),
        ("    def f(self):\n        # note\n        r'''Doc\n        more'''\n", False),
        ('    def f(self):\n        """Doc."""\n        x = """\n"""\n', True),
        ('    def f(self):\n        x = 1\n        """not a docstring"""\n', True),
        ('    def f(self, x=""):\n        return x  # """\n', True),
    ],
)
def test_only_a_leading_docstring_lets_a_method_body_be_elided(method, kept):
    assert converter._method_scanned(method) is kept


def test_a_module_whose_skeleton_does_not_parse_is_read_whole():
    # a bracket continued at column 0 ends the elided body early: the skeleton does not parse
    text = SCANNED_METHODS.replace("        self.vocab = 3  #", "        self.vocab = [\n3]  #")
    assert parse_tree(converter.method_skeleton(text, keep=converter._method_scanned)).has_error
    module = converter.read_module(text, "conversion/s.py", "conversion.s", [0], [])
    assert module.classes["Switching"].delegates == ("LlamaModel",)
    assert module.classes["Refusing"].init_raises


# ---------------------------------------------------------------- errors


def test_converter_missing_in_both_layouts_is_an_error():
    files = tree_v1()
    files.pop(SCRIPT)
    with pytest.raises(MissingPathError) as err:
        extract(files)
    assert err.value.paths == ("conversion/__init__.py", SCRIPT)


def test_converter_without_registrations_is_an_error():
    files = tree_v1()
    files[SCRIPT] = "import gguf\n\nclass LlamaModel:\n    model_arch = gguf.MODEL_ARCH.LLAMA\n"
    with pytest.raises(AnchorError) as err:
        extract(files)
    assert "no converter class registers" in str(err.value) and err.value.paths == (SCRIPT,)


def test_converter_that_does_not_parse_is_a_parse_error():
    files = tree_v2()
    files["conversion/jamba.py"] = "class JambaModel(TextModel:\n    pass\n"
    with pytest.raises(ParseError) as err:
        extract(files)
    assert err.value.paths == ("conversion/jamba.py",) and err.value.engine == "llamacpp"


def test_missing_gguf_names_dict_is_an_anchor_error():
    files = tree_v2()
    files[CONSTANTS] = files[CONSTANTS].replace("MODEL_ARCH_NAMES:", "ARCH_NAMES:")
    with pytest.raises(AnchorError) as err:
        extract(files)
    assert err.value.anchor == "MODEL_ARCH_NAMES" and err.value.paths == (CONSTANTS,)
