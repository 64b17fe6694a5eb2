"""Whether llama.cpp's loader accepts a file's tensors, by the shapes extracted from each
architecture's load_arch_tensors (generated/llamacpp tensor_shapes): a tensor of the header
whose shape differs from the one llama.cpp computes is refused as llama_model_loader's
check_tensor_dims refuses it; without tensor infos (a header apron built from an HF config), a
required tensor llama.cpp would size with a dimension 0 is refused too, since no checkpoint
holds one (a GGUF file without tensor infos is not checked). A shape or condition apron cannot
evaluate is left out, never guessed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apron.constraints import EngineConstraints
from apron.engines.llamacpp.gguf_header import GgufHeader
from apron.engines.llamacpp.hparams import Refused
from apron.expressions import Unknown, evaluate

# (id(rows), arch) -> (rows, kept alive; that architecture's rows): found once per architecture
_BY_ARCH: dict[tuple[int, str], tuple[tuple, list]] = {}
_KEPT = 256  # architectures remembered


def _rows_of(rows: tuple, arch: str) -> list:
    """The rows of one architecture, in order (found once per rows tuple and architecture)."""
    entry = _BY_ARCH.get((id(rows), arch))
    if entry is None or entry[0] is not rows:
        if len(_BY_ARCH) >= _KEPT:
            _BY_ARCH.clear()
        entry = _BY_ARCH[(id(rows), arch)] = (rows, [row for row in rows if arch in row.archs])
    return entry[1]


def _name(row: Any, block: int | None) -> str:
    name = row.name % block if "%d" in row.name and block is not None else row.name
    return f"{name}.{row.suffix}" if row.suffix else name


def check_tensors(
    header: GgufHeader,
    c: EngineConstraints,
    arch: str,
    hp: dict[str, Any],
    calls: dict[str, Callable[..., Any]],
    from_config: bool = False,
) -> None:
    """Raise Refused when llama.cpp would refuse the header's tensors (see the module doc);
    `from_config`: the header is the one apron built from an HF config (no tensor infos)."""
    if not c.has("tensor_shapes") or not (header.tensors or from_config):
        return  # no tensor infos to compare, and no config-built header whose sizes to check
    shapes = {t.name: t.shape for t in header.tensors}
    tokens = header.metadata.get("tokenizer.ggml.tokens")
    n_tokens = len(tokens) if isinstance(tokens, list) else getattr(tokens, "length", None)
    vocab = {"vocab.n_tokens": lambda: n_tokens if isinstance(n_tokens, int) else _no_vocab()}
    table = {**calls, **vocab}
    n_layer = hp.get("n_layer")
    per_layer = dict(hp)  # hp and the loop's layer (set per block below)
    for row in _rows_of(c.rows("tensor_shapes"), arch):
        if row.unknown or not (header.tensors or (row.required and row.condition == ())):
            continue  # without tensor infos only a required, unconditional tensor is checked
        loop = row.block if isinstance(row.block, str) and row.block.startswith("$") else ""
        if loop:
            if not isinstance(n_layer, int):
                continue
            blocks: list[int | None] = list(range(n_layer))
        else:
            blocks = [row.block] if type(row.block) is int else [None]
        for block in blocks:
            name = _name(row, block)
            if header.tensors and name not in shapes:
                continue  # only the file's tensors are compared (a missing one: not checked)
            names = hp
            if loop:
                per_layer[loop] = block
                names = per_layer
            try:
                if row.condition != () and not evaluate(row.condition, names, table):
                    continue
                dims = [evaluate(d, names, table) for d in row.dims]
            except Unknown:
                continue
            if header.tensors:
                got = shapes.get(name)
                expected = tuple(dims) + (1,) * (4 - len(dims))
                if got is not None and tuple(got) + (1,) * (4 - len(got)) != expected:
                    raise Refused(
                        f"check_tensor_dims: tensor '{name}' has wrong shape; expected "
                        f"{', '.join(map(str, dims))}, got {', '.join(map(str, got))} "
                        f"({row.symbol})"
                    )
            elif from_config and row.required and row.condition == () and 0 in dims:
                raise Refused(
                    f"{row.symbol} sizes the tensor '{name}' as ({', '.join(map(str, dims))}): a "
                    "dimension 0, which no checkpoint's tensor has (check_tensor_dims refuses it)"
                )


def _no_vocab() -> int:
    raise Unknown("the vocabulary size (no tokenizer.ggml.tokens in the header)")
