"""vLLM's attention backends read from skeletons (the bodies of methods the fact does not read
elided): the same rows and the same module-scope imports as when every file is read whole."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.parsing.python_ts import parse_tree
from apron.extractors.vllm import attention_backends
from tests.test_vllm_outline import DECOYS
from tests.vllm_serving_miniatures import BACKEND_BASE, backend_files

CUDA = "vllm/platforms/cuda.py"
REGISTRY = "vllm/v1/attention/backends/registry.py"
BASE = "vllm/v1/attention/backend.py"
FLASH = "vllm/v1/attention/backends/flash.py"


def outcome(function, *args):
    try:
        return function(*args)
    except (AnchorError, ParseError) as err:
        return type(err), str(err)


def skeleton_and_whole(monkeypatch, function, *args):
    """(the result with skeletons, the result with every file parsed whole)."""
    with_skeleton = outcome(function, *args)
    with monkeypatch.context() as patch:
        patch.setattr(attention_backends, "method_skeleton", lambda text, keep=None: text)
        whole = outcome(function, *args)
    return with_skeleton, whole


def rows(files: dict[str, str]):
    return attention_backends.attention_backends(
        files[CUDA] + DECOYS, files[REGISTRY], files[BASE], files.get, 16
    )


def test_backends_read_the_same_from_skeletons(monkeypatch):
    files = backend_files()
    files[FLASH] += DECOYS
    with_skeleton, whole = skeleton_and_whole(monkeypatch, rows, files)
    assert with_skeleton == whole
    assert {(r.backend, r.preferred_block) for r in with_skeleton} == {
        ("FLASH", 16),
        ("COMPUTED", None),
        ("SMALL_MLA", 64),
        ("WIDE_MLA", 32),
        ("GONE", None),
    }


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (attention_backends.base_rule_holds, (BACKEND_BASE + DECOYS, BASE)),
        (attention_backends.base_rule_holds, (DECOYS, BASE)),
        (attention_backends.enum_class_paths, (DECOYS, REGISTRY)),  # the enum is missing
        (attention_backends.priority_branches, (DECOYS, CUDA)),  # the function is missing
    ],
)
def test_base_rule_enum_and_priorities_read_the_same_from_skeletons(monkeypatch, function, args):
    with_skeleton, whole = skeleton_and_whole(monkeypatch, function, *args)
    assert with_skeleton == whole


def test_the_base_rule_is_read_from_the_kept_bodies():
    assert attention_backends.base_rule_holds(BACKEND_BASE + DECOYS, BASE) is True
    changed = BACKEND_BASE.replace("return default_block_size\n        return min", "return 0")
    assert attention_backends.base_rule_holds(changed, BASE) is False


def test_a_triple_quote_in_a_one_line_string_keeps_the_method_whole():
    # the line-based pass would take `'"""'` for a string running to the end of the file and
    # elide every class after this method with it
    files = backend_files()
    files[FLASH] = files[FLASH].replace(
        "class ComputedBackend(AttentionBackend):",
        'class Helper:\n    def render(self):\n        return \'"""\'\n\n\n'
        "class ComputedBackend(AttentionBackend):",
    )
    found = {(r.backend, r.reason) for r in rows(files)}
    assert ("COMPUTED", "ComputedBackend.get_supported_kernel_block_sizes computes its sizes") in (
        found
    )


def test_a_backend_module_that_does_not_parse_is_the_files_error():
    files = backend_files()
    files[FLASH] = files[FLASH].replace("class FlashBackend(AttentionBackend):", "class Flash(:")
    with pytest.raises(ParseError) as err:
        rows(files)
    assert err.value.paths == (FLASH,)


@pytest.mark.parametrize(
    ("text", "imports"),
    [
        ("from vllm.a import Base\n", {"Base": "vllm.a.Base"}),
        (
            "from vllm.a import Base as Alias, Other\n",
            {"Alias": "vllm.a.Base", "Other": "vllm.a.Other"},
        ),
        (
            "from vllm.a import (\n    Base,  # the base\n    Other,\n)\n",
            {"Base": "vllm.a.Base", "Other": "vllm.a.Other"},
        ),
        ("from __future__ import annotations\nfrom vllm.a import Base\n", {"Base": "vllm.a.Base"}),
        (
            "from . import Base\nfrom ..x import Other\nfrom vllm.s import *\n",
            {"Base": "vllm.backends.Base", "Other": "vllm.x.Other"},
        ),
        (
            "if TYPE_CHECKING: from vllm.a import Base\nelse:\n    from vllm.b import Base\n",
            {"Base": "vllm.b.Base"},
        ),
        (
            "if x:\n    pass\nelif y:\n    from vllm.c import Base\nelse: from vllm.d import Base\n",
            {"Base": "vllm.c.Base"},
        ),
        ("if x:  # a comment\n    from vllm.e import Base\n", {"Base": "vllm.e.Base"}),
        (
            "try:\n    from vllm.a import A\nexcept ImportError:\n    from vllm.b import A\n"
            "else:\n    from vllm.c import C\nfinally:\n    from vllm.d import D\n",
            {"A": "vllm.b.A", "C": "vllm.c.C", "D": "vllm.d.D"},
        ),
        ("try:\n    from vllm.a import A\nexcept* ValueError:\n    pass\n", {}),
        ("with ctx():\n    from vllm.a import A\n", {"A": "vllm.a.A"}),
        ("for x in y:\n    from vllm.a import A\nclass K:\n    from vllm.b import B\n", {}),
        (
            "def f():\n    from vllm.a import A\nif a:\n    if b:\n        from vllm.n import N\n",
            {"N": "vllm.n.N"},
        ),
    ],
)
def test_backend_imports_are_the_module_scope_ones(text, imports):
    # what Python binds at module scope, local name -> what it names (relative imports resolved
    # from the module's place); a one-line `if x: import` body is not a line of its own
    found = attention_backends._imports(parse_tree(text), "vllm.backends.flash", False)
    assert found == imports
