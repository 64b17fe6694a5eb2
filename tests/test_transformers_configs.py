"""extractors/transformers: configuration classes read statically from a release sdist (built here
from hand-written miniature modules that copy the shapes of transformers' and vLLM's files), and
apron reading the rendered tables back."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import tarfile
import types
from pathlib import Path

import pytest

from apron import normalize
from apron.expressions import expression_problem
from apron.extractors.errors import AnchorError, PinError, SourceError
from apron.extractors.transformers import __main__ as cli
from apron.extractors.transformers.config_classes import read_module
from apron.extractors.transformers.extract import transformers_tables, vllm_registry, vllm_tables
from apron.extractors.transformers.release import (
    ReleasePin,
    cache_path,
    configuration_modules,
    load_release_pin,
    sdist_bytes,
)
from apron.extractors.transformers.render import render_files
from tests.conftest import REPO_ROOT, write_pin

TOY = """
from ...configuration_utils import PreTrainedConfig


@auto_docstring(checkpoint="x/toy")
@strict
class ToyConfig(PreTrainedConfig):
    model_type = "toy"
    attribute_map = {"n_embd": "hidden_size"}
    keys_to_ignore_at_inference = ["past_key_values"]

    hidden_size: int = 4096
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    head_dim: int = 128
    max_window_layers: int = 2
    sliding_window: int | None = 4096
    use_sliding_window: bool = False
    layer_types: list[str] | None = None
    limit: tuple[float, float] = (0.0, float("inf"))

    def __post_init__(self, **kwargs):
        self.sliding_window = self.sliding_window if self.use_sliding_window else None
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        interval = kwargs.pop("full_attention_interval", 4)
        if self.layer_types is None:
            self.layer_types = [
                "linear_attention" if bool((i + 1) % interval) else "full_attention"
                for i in range(self.num_hidden_layers)
            ]
        for name in ("a", "b"):
            self.extra = name
        super().__post_init__(**kwargs)


class ToyVisionConfig(PreTrainedConfig):
    model_type = "toy_vision"
    patch_size: int = 14


class ToyVLConfig(PreTrainedConfig):
    model_type = "toy_vl"
    sub_configs = {"text_config": ToyConfig, "vision_config": ToyVisionConfig}
    text_config: dict | None = None

    def __post_init__(self, **kwargs):
        if self.text_config is None:
            self.text_config = ToyConfig()
        super().__post_init__(**kwargs)
"""

AUTO = """
CONFIG_MAPPING_NAMES = OrderedDict[str, str](
    [
        ("toy", "ToyConfig"),
        ("toy_vl", "ToyVLConfig"),
    ]
)
"""

VLLM_TOY = """
from transformers.configuration_utils import PretrainedConfig


class ToyConfig(PretrainedConfig):
    model_type = "toy"

    def __init__(self, hidden_size=1024, num_attention_heads=8, head_dim=None, **kwargs):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.head_dim = head_dim if head_dim is not None else hidden_size // num_attention_heads
        super().__init__(**kwargs)
"""

VLLM_REGISTRY_TEXT = """
_CONFIG_REGISTRY: dict[str, type[PretrainedConfig]] = LazyConfigDict(
    toy="ToyConfig",
    RefinedWeb="RWConfig",  # a comment
    **{"unlimited-ocr": "UnlimitedOCRConfig"},
)
"""

TOP = "transformers-9.9.9"
MODELS = "src/transformers/models"


def sdist(files: dict[str, str]) -> bytes:
    """A .tar.gz shaped like a transformers sdist: every path under one top folder."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{TOP}/{path}")
            info.size = len(data)
            info.mtime = 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


MINI = {
    f"{MODELS}/toy/configuration_toy.py": TOY,
    f"{MODELS}/auto/configuration_auto.py": AUTO,
    f"{MODELS}/toy/modeling_toy.py": "class ToyModel: pass\n",
    f"{MODELS}/toy/sub/configuration_deeper.py": "class DeepConfig: pass\n",
    "src/transformers/configuration_utils.py": "class PreTrainedConfig: pass\n",
}


def pin_for(data: bytes) -> ReleasePin:
    return ReleasePin(
        package="transformers", version="9.9.9", sha256=hashlib.sha256(data).hexdigest()
    )


# -- the reader -----------------------------------------------------------------------------------


def toy_classes():
    classes, warnings = read_module(TOY, "configuration_toy.py")
    return {c.class_name: c for c in classes}, warnings


def test_dataclass_fields_are_the_defaults_and_model_type_and_maps_are_read():
    classes, _ = toy_classes()
    toy = classes["ToyConfig"]
    assert toy.model_type == "toy"
    defaults = {d.field: (d.value, d.known) for d in toy.defaults}
    assert defaults["head_dim"] == (128, True)
    assert defaults["num_key_value_heads"] == (None, True)
    assert defaults["layer_types"] == (None, True)
    assert toy.attribute_map == (("n_embd", "hidden_size"),)
    assert classes["ToyVLConfig"].sub_configs == (
        ("text_config", "ToyConfig"),
        ("vision_config", "ToyVisionConfig"),
    )
    # the sub-config's construction is the sub_configs fact, not a derivation
    assert classes["ToyVLConfig"].derivations == ()


def test_post_init_derivations_are_expressions_of_the_rule_language_in_order():
    classes, _ = toy_classes()
    steps = [(d.field, d.condition, d.expression) for d in classes["ToyConfig"].derivations]
    assert steps[0] == (
        "sliding_window",
        (),  # always
        ("?:", ("self", "use_sliding_window"), ("self", "sliding_window"), None),
    )
    assert steps[1] == (
        "num_key_value_heads",
        ("==", ("self", "num_key_value_heads"), None),
        ("self", "num_attention_heads"),
    )
    # the local `interval` is substituted: a config.json key that is not a field, default 4
    assert steps[2] == (
        "layer_types",
        ("==", ("self", "layer_types"), None),
        (
            "map",
            "$i",
            ("call", "range", ("self", "num_hidden_layers")),
            (
                "?:",
                ("call", "bool", ("%", ("+", "$i", 1), ("hpget", "full_attention_interval", 4))),
                ("str", "linear_attention"),
                ("str", "full_attention"),
            ),
        ),
    )
    for _, condition, value in steps:
        assert expression_problem(condition) == expression_problem(value) == ""


def test_shapes_not_read_are_unknown_with_a_warning_never_dropped():
    classes, warnings = toy_classes()
    toy = classes["ToyConfig"]
    limit = next(d for d in toy.defaults if d.field == "limit")
    assert not limit.known and limit.code == '(0.0, float("inf"))'
    extra = next(d for d in toy.derivations if d.field == "extra")
    assert extra.expression[0] == "undef"
    codes = {(w.code, w.subject) for w in warnings}
    assert ("unread_default", "ToyConfig") in codes
    assert ("unread_statement", "ToyConfig") in codes


def test_init_style_class_reads_parameters_and_derivations():
    classes, warnings = read_module(VLLM_TOY, "vllm/transformers_utils/configs/toy.py")
    (toy,) = classes
    assert {d.field: d.value for d in toy.defaults} == {
        "head_dim": None,
        "hidden_size": 1024,
        "num_attention_heads": 8,
    }
    # `self.x = x` is the default; only the head_dim line is a derivation
    assert [(d.field, d.expression) for d in toy.derivations] == [
        (
            "head_dim",
            (
                "?:",
                ("!=", ("self", "head_dim"), None),
                ("self", "head_dim"),
                ("//", ("self", "hidden_size"), ("self", "num_attention_heads")),
            ),
        )
    ]
    assert warnings == []


def test_vllm_registry_reads_keywords_and_the_spread_dict():
    assert vllm_registry(VLLM_REGISTRY_TEXT) == [
        ("RefinedWeb", "RWConfig"),
        ("toy", "ToyConfig"),
        ("unlimited-ocr", "UnlimitedOCRConfig"),
    ]
    with pytest.raises(AnchorError, match="_CONFIG_REGISTRY"):
        vllm_registry("X = 1\n")


# -- the release ----------------------------------------------------------------------------------


def test_configuration_modules_are_the_models_configuration_files_only():
    data = sdist(MINI)
    assert list(configuration_modules(data, "mini")) == [
        f"{MODELS}/auto/configuration_auto.py",
        f"{MODELS}/toy/configuration_toy.py",
    ]


def test_sdist_from_source_is_checked_against_the_pin(tmp_path):
    data = sdist(MINI)
    path = tmp_path / "t.tar.gz"
    path.write_bytes(data)
    assert sdist_bytes(pin_for(data), path) == data
    wrong = ReleasePin(package="transformers", version="9.9.9", sha256="0" * 64)
    with pytest.raises(SourceError, match="has sha256"):
        sdist_bytes(wrong, path)


def test_without_a_cached_copy_it_says_how_to_fetch_it_with_pip(tmp_path):
    # apron downloads nothing and runs no installer: the user's pip fetches the sdist
    data = sdist(MINI)
    with pytest.raises(SourceError) as info:
        sdist_bytes(pin_for(data))
    assert "`pip download --no-deps --no-binary :all: transformers==9.9.9`" in str(info.value)
    assert "--source PATH" in str(info.value)
    path = tmp_path / "t.tar.gz"
    path.write_bytes(data)
    assert sdist_bytes(pin_for(data), path) == data  # given once, then kept in the cache
    assert cache_path(pin_for(data)).read_bytes() == data
    assert sdist_bytes(pin_for(data)) == data


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('release = "9.9.9"\nurl = "http://x"\n', "exactly package, version, sha256"),
        (
            'package = "transformers"\nversion = "9.9.9"\nsha256 = "%s"\nurl = "https://x"\n'
            % ("a" * 64),
            "exactly package, version, sha256",  # no index address lives in the pin
        ),
        ('package = "-x"\nversion = "9.9.9"\nsha256 = "%s"\n' % ("a" * 64), "package '-x'"),
        ('package = "t"\nversion = "nine"\nsha256 = "%s"\n' % ("a" * 64), "version 'nine'"),
        ('package = "t"\nversion = "9.9.9"\nsha256 = "ABC"\n', "64 lowercase hex"),
    ],
)
def test_release_pin_is_validated(tmp_path, text, message):
    (tmp_path / "transformers.toml").write_text(text)
    with pytest.raises(PinError, match=message):
        load_release_pin(tmp_path)


def test_the_committed_pin_names_the_release_the_vllm_pin_accepts():
    pin = load_release_pin(REPO_ROOT / "pins")
    # vLLM's requirements/common.txt at its pin: transformers >= 5.5.3
    assert pin.package == "transformers"
    assert tuple(int(p) for p in pin.version.split(".")) >= (5, 5, 3)
    header = (REPO_ROOT / "generated/transformers/config_classes.py").read_text()
    assert f"# sha256: {pin.sha256}" in header and f'RELEASE = "{pin.version}"' in header
    # no index address in the repository: pip resolves the file from the user's index
    assert "https://" not in (REPO_ROOT / "pins/transformers.toml").read_text()
    assert "pythonhosted" not in header


# -- rendering and apron reading it back -----------------------------------------------------------


def rendered() -> dict[str, str]:
    data = sdist(MINI)
    modules = configuration_modules(data, "mini")
    ours = transformers_tables(modules, {p: "b" * 40 for p in modules})
    vllm_files = {"vllm/transformers_utils/configs/toy.py": VLLM_TOY}
    blobs = {p: "c" * 40 for p in [*vllm_files, "vllm/transformers_utils/config.py"]}
    vllm = vllm_tables(VLLM_REGISTRY_TEXT, vllm_files, blobs)
    return render_files(pin_for(data), ours, "d" * 40, "2026-01-01", vllm)


def test_rendering_is_deterministic_one_fact_per_line():
    first, second = rendered(), rendered()
    assert first == second
    module = first["config_classes.py"]
    assert '    ("ToyConfig", "head_dim", 128, True),' in module
    assert '    ("toy", "ToyConfig"),' in module  # REGISTRY from CONFIG_MAPPING_NAMES
    assert "float(" in module  # the unread default is kept as its code, known False


def test_missing_auto_mapping_is_an_anchor_error():
    modules = {f"{MODELS}/toy/configuration_toy.py": TOY}
    with pytest.raises(AnchorError, match="CONFIG_MAPPING_NAMES"):
        transformers_tables(modules, {p: "b" * 40 for p in modules})


def loaded(text: str, path: Path) -> types.ModuleType:
    """A rendered module imported from a file, as apron imports generated/transformers/."""
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def mini_tables(tmp_path) -> normalize.ConfigClasses:
    files = rendered()
    ours = normalize._tables(
        loaded(files["config_classes.py"], tmp_path / "ours.py"), "transformers 9.9.9"
    )
    vllm = normalize._tables(
        loaded(files["vllm_config_classes.py"], tmp_path / "theirs.py"), "vLLM dddd"
    )
    # vLLM's KV-head alias keys, whose MHA fallback copy is never filled in
    return normalize.ConfigClasses(ours, vllm, frozenset({"num_key_value_heads"}))


def test_apron_evaluates_the_rendered_derivations(mini_tables):
    cls = mini_tables.class_named("ToyConfig")
    assert cls is not None and cls.origin == "vLLM dddd"  # vLLM's class replaces transformers'
    ours = mini_tables.transformers.classes["ToyConfig"]
    found = mini_tables.class_fields(ours, {"num_hidden_layers": 4, "full_attention_interval": 2})
    # interval 2 from config.json: layers 2 and 4 full
    assert found["layer_types"].value == [
        "linear_attention",
        "full_attention",
        "linear_attention",
        "full_attention",
    ]
    assert found["head_dim"].value == 128 and "class default" in found["head_dim"].source
    # use_sliding_window False: transformers sets sliding_window None, so nothing is filled
    assert "sliding_window" not in found
    # the MHA fallback copy is withheld; the unread default (limit) and derivation (extra) too
    assert not {"num_key_value_heads", "limit", "extra"} & set(found)


def test_apron_reads_vllms_init_class_and_the_text_sub_config(mini_tables):
    vllm_toy = mini_tables.class_for("toy")
    # vLLM's ToyConfig: head_dim None -> hidden_size // num_attention_heads = 2048 // 16 = 128
    found = mini_tables.class_fields(vllm_toy, {"hidden_size": 2048, "num_attention_heads": 16})
    assert found["head_dim"].value == 128
    # a toy_vl config whose text_config has no model_type: ToyVLConfig.sub_configs names ToyConfig,
    # the class of its own module (transformers'), not vLLM's class of the same name
    text = mini_tables.text_class(None, "text_config", "toy_vl")
    assert text is not None and (text.name, text.origin) == ("ToyConfig", "transformers 9.9.9")


def test_main_writes_and_checks_generated_transformers(project, make_repo, tmp_path, capsys):
    data = sdist(MINI)
    source = tmp_path / "t.tar.gz"
    source.write_bytes(data)
    pin = pin_for(data)
    (project.pins / "transformers.toml").write_text(
        f'package = "{pin.package}"\nversion = "{pin.version}"\nsha256 = "{pin.sha256}"\n'
    )
    repo, shas = make_repo(
        [
            (
                {
                    "vllm/transformers_utils/config.py": VLLM_REGISTRY_TEXT,
                    "vllm/transformers_utils/configs/toy.py": VLLM_TOY,
                    "vllm/transformers_utils/configs/notes.md": "not python\n",
                },
                "one",
                "2026-03-01T00:00:00+00:00",
            )
        ]
    )
    write_pin(project, "vllm", "https://example.invalid/vllm", shas[0], "2026-03-01")
    args = ["--root", str(project.root), "--source", str(source), "--vllm-source", str(repo)]
    assert cli.main(args) == 0
    folder = Path(project.generated / "transformers")
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "__init__.py",
        "config_classes.py",
        "config_defaults.json",
        "vllm_config_classes.py",
    ]
    assert f"# commit: {shas[0]} (2026-03-01)" in (folder / "vllm_config_classes.py").read_text()
    assert cli.main([*args, "--check"]) == 0
    (folder / "config_classes.py").write_text("edited\n")
    assert cli.main([*args, "--check"]) == 1
    assert "generated/transformers/config_classes.py differs" in capsys.readouterr().out


def test_a_sub_config_the_constructor_builds_is_a_sub_config_not_a_derivation():
    text = """
class ToyVLConfig(PretrainedConfig):
    model_type = "toy_vl"

    def __init__(self, text_config=None, vision_config=None, **kwargs):
        if isinstance(text_config, dict):
            self.text_config = ToyTextConfig(**text_config)
        else:
            self.text_config = text_config or ToyTextConfig()
        self.vision_config = VisionConfig(**(vision_config or {}))
        self.vocab_size = self.text_config.vocab_size
        super().__init__(**kwargs)
"""
    (cls,), warnings = read_module(text, "vllm/transformers_utils/configs/toy_vl.py")
    assert cls.sub_configs == (("text_config", "ToyTextConfig"), ("vision_config", "VisionConfig"))
    # the value read through the sub-config is not read: unknown, with a warning
    assert [(d.field, d.expression[0]) for d in cls.derivations] == [("vocab_size", "undef")]
    assert [w.code for w in warnings] == ["unread_expression"]


def test_tables_of_another_rule_encoding_are_refused_naming_the_file():
    """Tables rendered before the rules became expressions of apron/expressions.py (no
    SCHEMA_VERSION: the tagged trees) are an error naming the module and the command, never read
    with the wrong meaning."""
    from apron.errors import ConstraintsError

    old = types.SimpleNamespace(__file__="generated/transformers/config_classes.py", RELEASE="1")
    with pytest.raises(ConstraintsError, match=r"config_classes\.py: SCHEMA_VERSION is 1; .*"):
        normalize.ConfigClasses.from_modules(old, old, frozenset())
