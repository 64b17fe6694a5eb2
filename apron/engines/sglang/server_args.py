"""SGLang's server args as the names its extracted rules read (the memory fraction, the prefill
cuda-graph backend), under the assumptions apron states for SGLang's column: every ServerArgs
field at its extracted default (generated/sglang/server_arg_defaults.py), read as `self.X` and
through the resolving views `self._resolved().X` and `resolved_view(self).X` (default server
args: no pass resolves a field apron reads to another value), and a CUDA platform's answers
(PLATFORM). A name that is neither is unknown where a rule uses it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from apron.expressions import PYTHON, Unknown, absent, evaluate

FACT = "server_arg_defaults"
ASSUMPTIONS = (
    "a CUDA device",
    "default server args",
    "no environment variables set",
    "not disaggregated",
)
# How SGLang's rules read a field: the object, then the resolving views of it (server_args.py:
# ServerArgs._resolved() is resolved_view(self), a read-through view of the declared fields).
VIEWS = ("self.", "self._resolved().", "resolved_view(self).")
# A CUDA platform, SGLang's platform probes (srt/utils and current_platform) answer so.
PLATFORM_CALLS = {
    name: (lambda: False) for name in ("is_hip", "is_npu", "is_cpu", "is_mps", "is_xpu")
}
PLATFORM_NAMES: dict[str, Any] = {
    "current_platform.is_out_of_tree()": False,  # CUDA is an in-tree platform
    "current_platform.support_piecewise_cuda_graph()": absent(
        "an out-of-tree platform's piecewise support (not CUDA's)"
    ),
}


class ServerArgs(Mapping[str, Any]):
    """The names of ServerArgs' fields at their extracted defaults; a default apron cannot
    evaluate is absent (unknown where it is used), a field without one is not a name here."""

    def __init__(self, defaults: Mapping[str, Any]) -> None:
        self.defaults = defaults  # field -> its default's expression
        self._values: dict[str, Any] = {}

    def _field(self, name: str) -> str | None:
        for view in VIEWS:
            if name.startswith(view) and name[len(view) :] in self.defaults:
                return name[len(view) :]
        return None

    def __getitem__(self, name: str) -> Any:
        field = self._field(name)
        if field is None:
            raise KeyError(name)
        if field not in self._values:
            self._values[field] = _value(field, self.defaults[field])
        return self._values[field]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._field(name) is not None

    def __iter__(self) -> Iterator[str]:
        return (f"self.{field}" for field in self.defaults)

    def __len__(self) -> int:
        return len(self.defaults)


def _value(field: str, default: Any) -> Any:
    try:
        return evaluate(default, {}, None, PYTHON)
    except Unknown as err:
        return absent(f"ServerArgs.{field}'s default is not evaluated: {err}")


def server_args(constraints: Any) -> ServerArgs:
    """ServerArgs at its defaults from SGLang's extracted fact (no names when it is not there)."""
    rows = constraints.rows(FACT) if constraints.has(FACT) else ()
    return ServerArgs({row.field: row.default for row in rows})
