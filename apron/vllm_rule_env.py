"""The environment vLLM's extracted rules are evaluated in (apron/expressions.py evaluates them):
the functions they call, the dtype table they index, and names looked up lazily."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from apron.expressions import Unknown, absent

TORCH_DTYPES = "STR_DTYPE_TO_TORCH_DTYPE"  # vllm/utils/torch_utils.py: the name is the dtype
TORCH = "torch."  # torch.float32: the dtype named float32
ABSENT = "the config has no "  # how a name LazyNames does not find reads where it is used


def divide(a: Any, b: Any) -> Any:
    """vllm.distributed.divide: asserts a % b == 0, then a // b."""
    if a % b:
        raise Unknown(f"{a:,} is not divisible by tp {b}: vLLM's divide() refuses it")
    return a // b


def kv_cache_torch_dtype(cache_dtype: Any, model_dtype: Any) -> Any:
    """vllm/utils/torch_utils.py get_kv_cache_torch_dtype: auto -> the model dtype."""
    return model_dtype if cache_dtype == "auto" else cache_dtype


def cdiv(a: Any, b: Any) -> Any:
    """vllm.utils.math_utils.cdiv: -(a // -b)."""
    return -(a // -b)


CALLS: dict[str, Callable[..., Any]] = {
    "divide": divide,
    "int": int,
    "get_kv_cache_torch_dtype": kv_cache_torch_dtype,
    "cdiv": cdiv,
    "max": max,
    "min": min,
    "len": len,
}


class _DtypeTable(Mapping):
    """STR_DTYPE_TO_TORCH_DTYPE as apron names dtypes: each spelling is its own name."""

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, str):
            raise KeyError(key)
        return key

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


DTYPE_TABLE = _DtypeTable()


class CalculatorNames(Mapping):
    """The names inside a calculator method: its parameters, the dtype table, torch dtypes."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def __getitem__(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        if name == TORCH_DTYPES:
            return DTYPE_TABLE
        if name.startswith(TORCH):
            return name.removeprefix(TORCH)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (
            name in self.values or name == TORCH_DTYPES or name.startswith(TORCH)
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


class LazyNames(Mapping):
    """Every name a rule reads, looked up by `lookup` when read: (value, found); a name not found
    is recorded in `missing` and is absent (undefined where it is used; getattr's default)."""

    def __init__(self, lookup: Callable[[str], tuple[Any, str | None]], missing: list[str]):
        self.lookup = lookup
        self.missing = missing

    def __getitem__(self, name: str) -> Any:
        value, lacking = self.lookup(name)
        if lacking is None:
            return value
        self.missing.append(lacking)
        return absent(ABSENT + lacking)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0
