"""SGLang's own configuration classes as a fact (config_class_attributes), and the SGLang column
reading a config the way SGLang's class presents it (Kimi-K3's vision tower)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apron.config import ModelConfig
from apron.constraints import load_constraints
from apron.engines.sglang.fraction import fraction_for
from apron.extractors.errors import AnchorError
from apron.extractors.sglang.config_classes import config_class_attributes, registered_classes

ROOT = Path(__file__).resolve().parent.parent
KIMI_K3 = ROOT / "conformance" / "sglang" / "configs" / "kimi-k3-shaped.json"
GIB80 = 80 * 2**30
REGISTRY_PATH = "python/sglang/srt/utils/hf_transformers/common.py"
REGISTRY = """
_CONFIG_REGISTRY: Dict[str, Type[PretrainedConfig]] = {
    cls.model_type: cls
    for cls in [
        TowerTopConfig,
        OtherConfig,
        TableConfig,
    ]
}
try:
    class _Alias(OtherConfig):
        model_type = "alias"

    _CONFIG_REGISTRY["alias"] = _Alias
except ImportError:
    pass
"""
CONFIGS = {
    "python/sglang/srt/configs/tower.py": """
class TowerVisionConfig(PretrainedConfig):
    model_type = "tower_vision"

    def __init__(self, vt_hidden_size: int = 1024, depth=27, patch=(2, 2), **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = vt_hidden_size
        self.num_hidden_layers = depth
        self.patch = tuple(patch)


class TowerTopConfig(PretrainedConfig):
    model_type = "tower_top"

    def __init__(self, vision_config=None, text_config=None, pad=0, **kwargs):
        if vision_config is None:
            self.vision_config = TowerVisionConfig()
        elif isinstance(vision_config, dict):
            self.vision_config = TowerVisionConfig(**vision_config)
        else:
            self.vision_config = vision_config
        self.pad = pad
        super().__init__(**kwargs)


class TableConfig(PretrainedConfig):
    model_type = "table"
    sub_configs = {"vision_config": TowerVisionConfig}

    def __init__(self, vision_config=None, **kwargs):
        if isinstance(vision_config, dict):
            self.vision_config = self.sub_configs["vision_config"](**vision_config)
        elif vision_config is None:
            self.vision_config = self.sub_configs["vision_config"]()
        super().__init__(**kwargs)


class UnusedConfig(PretrainedConfig):
    model_type = "unused"

    def __init__(self, size=1, **kwargs):
        self.size = size
        super().__init__(**kwargs)
""",
}


def _rows():
    return {
        (r.config_class, r.attribute): r
        for r in config_class_attributes(CONFIGS, REGISTRY, REGISTRY_PATH)
    }


def test_the_registry_lists_the_comprehensions_classes_and_later_entries():
    assert registered_classes(REGISTRY, REGISTRY_PATH) == {
        "TowerTopConfig",
        "OtherConfig",
        "TableConfig",
        "_Alias",
    }


def test_a_missing_registry_is_an_anchor_error():
    with pytest.raises(AnchorError, match="_CONFIG_REGISTRY"):
        registered_classes("x = 1\n", REGISTRY_PATH)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            ("TowerTopConfig", "vision_config"),
            ("sub_config", "vision_config", "None", "TowerVisionConfig", False, True),
        ),
        (("TowerTopConfig", "pad"), ("kwarg", "pad", "0", "", False, True)),
        # the class's sub_configs table names the class
        (
            ("TableConfig", "vision_config"),
            ("sub_config", "vision_config", "None", "TowerVisionConfig", False, True),
        ),
        (
            ("TowerVisionConfig", "hidden_size"),
            ("kwarg", "vt_hidden_size", "1024", "", True, False),
        ),
        (("TowerVisionConfig", "num_hidden_layers"), ("kwarg", "depth", "27", "", True, False)),
        (("TowerVisionConfig", "patch"), ("unread", "", "", "", True, False)),
    ],
)
def test_each_attribute_says_what_init_sets_it_from(key, expected):
    row = _rows()[key]
    assert (
        row.kind,
        row.kwarg,
        row.default,
        row.sub_class,
        row.after_super,
        row.registered,
    ) == expected


def test_only_registered_classes_and_the_sub_configurations_they_build_have_rows():
    assert {c for c, _ in _rows()} == {"TowerTopConfig", "TableConfig", "TowerVisionConfig"}
    assert _rows()["TowerVisionConfig", "patch"].code == "tuple(patch)"


def test_kimi_k3s_vision_tower_is_the_one_sglangs_class_presents():
    """SGLang's KimiK3VisionConfig takes vt_hidden_size (default 1024) and vt_num_hidden_layers
    (default 27) and sets hidden_size / num_hidden_layers from them after super().__init__, so
    the file's hidden_size 1152 is not what the VLM adjustment reads. At 80 GiB, tp 1 (prefill
    capture off: multimodal through text_config): reserved 13,440 MiB -> round(68,480 / 81,920,
    3) = 0.836; VLM factor 0.95 x (1 - 0.1 x (27 x 1024^2 / (24 x 1024^2) - 1)) = 0.938125;
    0.836 x 0.938125 = 0.7842725, SGLang's measured answer (with 1152: 0.76054)."""
    sglang = load_constraints().get("sglang")
    rows = {(r.config_class, r.attribute): r for r in sglang.rows("config_class_attributes")}
    assert (
        rows["KimiK3VisionConfig", "hidden_size"].kwarg,
        rows["KimiK3VisionConfig", "hidden_size"].default,
    ) == ("vt_hidden_size", "1024")
    model = ModelConfig(json.loads(KIMI_K3.read_text()), str(KIMI_K3))
    fraction, _, lines, _ = fraction_for(sglang, model, True, GIB80, 1)
    assert fraction == pytest.approx(0.7842725, abs=1e-12)
    assert any("27 layers x 1024 hidden" in line for line in lines)


def test_a_vision_field_the_class_sets_by_unread_code_is_unknown():
    sglang = load_constraints().get("sglang")
    rows = [
        r._replace(kind="unread", kwarg="", code="compute(x)")
        if (r.config_class, r.attribute) == ("KimiK3VisionConfig", "hidden_size")
        else r
        for r in sglang.rows("config_class_attributes")
    ]

    class Edited:
        def rows(self, fact):
            return rows if fact == "config_class_attributes" else sglang.rows(fact)

        def has(self, fact):
            return sglang.has(fact)

        def cite(self, row):
            return sglang.cite(row)

    model = ModelConfig(json.loads(KIMI_K3.read_text()), str(KIMI_K3))
    fraction, source, _, _ = fraction_for(Edited(), model, True, GIB80, 1)
    assert fraction is None
    assert "KimiK3VisionConfig.__init__" in source and "`compute(x)`" in source
