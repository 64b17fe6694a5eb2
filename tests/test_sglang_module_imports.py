"""A registering model module that no longer imports at a commit (sarashina2_vision at SGLang's
pin asks managers/mm_utils for a name it moved away): resolved statically, the registry row is
kept and marked, and apron's SGLang column treats the architecture as not served."""

from __future__ import annotations

from apron.extractors.sglang.module_imports import bound_names, import_errors
from apron.extractors.sglang.registry_rows import models_registry

MODELS = "python/sglang/srt/models"
MM_UTILS = "python/sglang/srt/managers/mm_utils.py"
SCHEDULE = "python/sglang/srt/managers/schedule_batch.py"

TREE = {
    MM_UTILS: (
        "from sglang.srt.managers.schedule_batch import Modality\n\n"
        "def general_mm_embed_routine(*args):\n    return None\n\n"
        "class MultiModalityDataPaddingPattern:\n    pass\n"
    ),
    SCHEDULE: "class MultimodalDataItem:\n    pass\n\nclass Modality:\n    IMAGE = 1\n",
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/linear.py": "try:\n    from x import Fast\nexcept ImportError:\n"
    "    Fast = None\nReplicatedLinear, RowLinear = object, object\n",
}
VISION = (
    "from sglang.srt.layers.linear import Fast, ReplicatedLinear\n"
    "from sglang.srt.managers.mm_utils import (\n"
    "    MultimodalDataItem,  # moved to schedule_batch\n"
    "    general_mm_embed_routine,\n"
    ")\n\n"
    "class VisionForCausalLM:\n    pass\n\n"
    "EntryClass = [VisionForCausalLM]\n"
)
LLAMA = (
    "from sglang.srt.layers import linear\n"
    "from sglang.srt.managers.schedule_batch import MultimodalDataItem\n\n"
    "class LlamaForCausalLM:\n    pass\n\nEntryClass = LlamaForCausalLM\n"
)


def _read(path: str) -> str | None:
    return TREE.get(path)


def test_a_name_the_target_does_not_bind_is_an_import_error():
    assert import_errors(VISION, f"{MODELS}/vision.py", _read) == (
        "cannot import name 'MultimodalDataItem' from 'sglang.srt.managers.mm_utils'",
    )


def test_names_bound_by_class_def_import_assignment_or_submodule_resolve():
    assert import_errors(LLAMA, f"{MODELS}/llama.py", _read) == ()
    assert {"Fast", "ReplicatedLinear", "RowLinear"} <= bound_names(
        TREE["python/sglang/srt/layers/linear.py"], "linear.py"
    )


def test_a_target_that_binds_names_dynamically_is_not_judged():
    tree = {**TREE, MM_UTILS: TREE[MM_UTILS] + "from sglang.srt.managers.schedule_batch import *\n"}
    assert import_errors(VISION, f"{MODELS}/vision.py", tree.get) == ()


def test_the_registry_row_of_a_module_that_does_not_import_is_marked():
    texts = {f"{MODELS}/vision.py": VISION, f"{MODELS}/llama.py": LLAMA}
    rows, warnings = models_registry(texts, _read)
    marks = {r.architecture: r.import_error for r in rows}
    assert marks == {
        "LlamaForCausalLM": "",
        "VisionForCausalLM": "cannot import name 'MultimodalDataItem' from "
        "'sglang.srt.managers.mm_utils'",
    }
    assert ("module-does-not-import", "vision") in {(w.code, w.subject) for w in warnings}
