"""The committed generated/transformers/ against the real sources: the pinned transformers sdist
(APRON_TRANSFORMERS_SDIST, a local copy; `pip download --no-deps --no-binary :all:
transformers==<release>`) and the vLLM mirror (APRON_MIRROR_VLLM). Skips unless both are given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apron.extractors.transformers.__main__ import render_project
from tests.conftest import REPO_ROOT, mirror

SDIST = os.environ.get("APRON_TRANSFORMERS_SDIST")
VLLM = mirror("vllm")

pytestmark = [
    pytest.mark.real_mirror,
    pytest.mark.skipif(
        not (SDIST and VLLM), reason="APRON_TRANSFORMERS_SDIST and APRON_MIRROR_VLLM not set"
    ),
]


def test_committed_modules_are_what_the_pinned_sources_give():
    files = render_project(REPO_ROOT, Path(SDIST or ""), VLLM)
    folder = REPO_ROOT / "generated" / "transformers"
    for name, text in files.items():
        assert (folder / name).read_text(encoding="utf-8") == text, name
    ours = files["config_classes.py"]
    # transformers 5.5.3 src/transformers/models/qwen3/configuration_qwen3.py: head_dim: int = 128
    assert '    ("Qwen3Config", "head_dim", 128, True),' in ours
    # .../granitemoehybrid/configuration_granitemoehybrid.py: mamba_expand: int | None = 2
    assert '    ("GraniteMoeHybridConfig", "mamba_expand", 2, True),' in ours
    # vLLM registers its own Qwen3NextConfig for qwen3_next
    assert '    ("qwen3_next", "Qwen3NextConfig"),' in files["vllm_config_classes.py"]


def test_every_edit_of_the_configuration_modules_gives_the_same_classes():
    """Form is not meaning: every Python edit of tests/metamorphic.py, applied to every
    configuration module of the pinned sdist, gives the same classes, defaults, derivations and
    validator conditions (the raise messages are kept as code, so they are left out)."""
    from apron.extractors.transformers.config_classes import read_module
    from apron.extractors.transformers.release import (
        configuration_modules,
        load_release_pin,
        sdist_bytes,
    )
    from tests.metamorphic import PYTHON_EDITS, edit_python

    pin = load_release_pin(REPO_ROOT / "pins")
    modules = configuration_modules(sdist_bytes(pin, Path(SDIST or "")), str(SDIST))

    def facts(text: str, path: str) -> list[tuple]:
        classes, _ = read_module(text, path)
        return [
            (
                c.class_name,
                c.model_type,
                c.bases,
                c.defaults,
                c.attribute_map,
                c.sub_configs,
                [(d.field, d.condition, d.expression) for d in c.derivations],
                [(v.method, v.condition, v.error) for v in c.validators],
                c.strict,
                c.field_types,
            )
            for c in classes
        ]

    edited = 0
    for path, text in sorted(modules.items()):
        changed = edit_python(text, tuple(PYTHON_EDITS))
        if changed != text:
            edited += 1
            assert facts(changed, path) == facts(text, path), path
    assert edited > 300
