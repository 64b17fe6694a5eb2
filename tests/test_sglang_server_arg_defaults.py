"""ServerArgs' field defaults as data (server_arg_defaults): what apron's SGLang rules read as
default server args."""

from __future__ import annotations

import pytest

from apron.engines.sglang.server_args import ServerArgs
from apron.expressions import Unknown, evaluate
from apron.extractors.errors import AnchorError
from apron.extractors.sglang.server_arg_defaults import server_arg_defaults

PATH = "python/sglang/srt/server_args.py"
SERVER_ARGS = """
import dataclasses


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tp_size: A[int, "tensor parallel size", NS("parallel")] = 1
    enable_lora: A[Optional[bool], "LoRA", NS("lora")] = None
    moe_a2a_backend: A[str, "a2a", NS("exec.moe")] = "none"
    enable_hierarchical_cache: A[bool, "Enable hierarchical cache", NS("memory")] = (
        False
    )
    capacity: int = 10 * 1000 * 1000
    urls: List[str] = dataclasses.field(default_factory=list)
    prefixes: List[str] = dataclasses.field(default_factory=lambda: list(PREFIXES))
    backend: str = CHOICES[0]
    ONLY = ("MuseGlimmerForConditionalGeneration",)

    def __post_init__(self):
        self.tp_size = 2
"""


def _defaults(text: str = SERVER_ARGS) -> dict:
    return {r.field: r.default for r in server_arg_defaults(text, PATH)}


def test_each_field_with_a_value_is_a_row_in_the_rule_language():
    assert _defaults() == {
        "ONLY": ("list", ("str", "MuseGlimmerForConditionalGeneration")),
        "backend": ("undef", "CHOICES[0]"),  # a module constant: not evaluated
        "capacity": ("*", ("*", 10, 1000), 1000),
        "enable_hierarchical_cache": False,
        "enable_lora": None,
        "moe_a2a_backend": ("str", "none"),
        "prefixes": ("undef", "dataclasses.field(default_factory=lambda: list(PREFIXES))"),
        "tp_size": 1,
        "urls": ("list",),
    }  # model_path has no default: no row; __post_init__'s assignment is not a default


def test_form_is_not_meaning():
    edited = SERVER_ARGS.replace(
        '    tp_size: A[int, "tensor parallel size", NS("parallel")] = 1\n',
        "    # the tensor-parallel size\n    tp_size: int = (\n        1  # one GPU\n    )\n",
    ).replace('= "none"', "= 'none'")
    assert _defaults(edited) == _defaults()


def test_apron_reads_the_fields_through_the_resolving_views():
    args = ServerArgs(_defaults())
    assert args["self.tp_size"] == 1
    assert args["self._resolved().moe_a2a_backend"] == "none"
    assert args["resolved_view(self).capacity"] == 10_000_000
    assert "self.model_path" not in args  # no default: not a name
    assert "self._resolved().nothing" not in args
    with pytest.raises(
        Unknown, match=r"ServerArgs.backend's default is not evaluated: .*\(CHOICES\[0\]\)"
    ):
        evaluate("self.backend", args)
    assert evaluate(("and", False, "self.backend"), args) is False  # unused: fine


def test_no_server_args_class_is_an_anchor_error():
    with pytest.raises(AnchorError, match="ServerArgs"):
        server_arg_defaults("class Other:\n    x = 1\n", PATH)
