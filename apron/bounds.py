"""The one place a number from outside apron is checked: an option's text, a config field, a
value in a file's header. It must be an integer (a bool, a float, a digit string in another
script are refused), within the bound the engines hold it to, else ApronInputError naming the
value, the bound, whose bound it is and where the value came from. Option text is parsed here
(its digits counted before int() sees them, so a 5,000-digit value is one message), and every
figure after it is computed in integers.

An engine-specific bound read from the engine's source (llama.cpp's LLAMA_MAX_SEQ) is a Bound
built from its constraints (apron.engines.llamacpp) and checked with the same `checked`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from apron.errors import ApronInputError
from apron.record import Record
from apron.terminal import shown

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_OPTION_CHARS = 40  # the longest number text read (a 19-digit integer, a point, a unit)


class Bound(Record):
    """Inclusive integer bounds and whose they are, for the message."""

    low: int
    high: int
    why: str  # "vLLM holds seq_lens in int32 (GPUModelRunner) and llama.cpp's n_ctx is int32_t"


CONTEXT = Bound(
    1,
    INT32_MAX,
    "vLLM holds sequence lengths in int32 (GPUModelRunner.seq_lens) and llama.cpp reads -c into "
    "common_params.n_ctx, an int32_t",
)
BATCH = Bound(
    1,
    INT32_MAX,
    "vLLM's max_num_seqs is at least 1 (SchedulerConfig) and sizes int32 buffers; llama.cpp's "
    "n_parallel is an int32_t",
)
TP = Bound(
    1,
    INT32_MAX,
    "vLLM's tensor_parallel_size is at least 1 (ParallelConfig); torch.distributed counts ranks "
    "in 32-bit integers",
)
BLOCK_SIZE = Bound(
    1,
    INT32_MAX,
    "vLLM's CacheConfig.block_size is a positive int (Field(gt=0)) held in int32 block tables",
)
PIPELINE = Bound(
    1,
    INT32_MAX,
    "vLLM's pipeline_parallel_size is at least 1 (ParallelConfig); torch.distributed counts "
    "ranks in 32-bit integers",
)
LLAMACPP_BATCH = Bound(
    1, INT32_MAX, "llama.cpp reads -b / -ub into common_params.n_batch / n_ubatch, int32_t"
)
BYTES = Bound(1, INT64_MAX, "apron counts bytes in signed 64-bit integers, as torch does")
PARAMS = Bound(1, INT64_MAX, "apron counts parameters in signed 64-bit integers, as torch does")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _range(bound: Bound) -> str:
    return f"{bound.low:,}..{bound.high:,}"


def what_it_is(value: Any) -> str:
    """'true', 'a float (128.5)', 'a string ("32")', 'NaN', '-2': how a value is named in a
    message about its type or range."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return f"a float ({value!r})"
    if isinstance(value, str):
        return f"a string ({shown(repr(value))})"
    if isinstance(value, list | tuple):
        return f"a list ({shown(value)})"
    if isinstance(value, Mapping):
        return f"an object ({shown(value)})"
    return f"a {type(value).__name__} ({shown(value)})"


def checked(value: Any, bound: Bound, where: str) -> int:
    """`value` when it is an integer within `bound`; else ApronInputError: "{where} is true, not
    an integer" or "{where} = -5; it must be 1..2,147,483,647 ({bound.why})"."""
    if not _is_int(value):
        raise ApronInputError(f"{where} is {what_it_is(value)}, not an integer")
    if not bound.low <= value <= bound.high:
        raise ApronInputError(f"{where} = {value:,}; it must be {_range(bound)} ({bound.why})")
    return value


def check_length(text: str, where: str) -> str:
    """`text` stripped, refused when longer than any number apron reads (before it is parsed)."""
    stripped = text.strip()
    if len(stripped) > MAX_OPTION_CHARS:
        raise _too_long(stripped, where)
    return stripped


def _too_long(text: str, where: str) -> ApronInputError:
    return ApronInputError(
        f"{where} {shown(text, MAX_OPTION_CHARS)} is not a number apron reads "
        f"({len(text):,} characters; at most {MAX_OPTION_CHARS})"
    )


_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


def parse_int(text: str, bound: Bound, where: str) -> int:
    """An option's text as an integer within `bound`: ASCII digits with an optional sign
    ("²", "1e9", "8.0" and 5,000 digits are refused, each with one message)."""
    stripped = text.strip()
    if len(stripped) > MAX_OPTION_CHARS:
        raise _too_long(stripped, where)
    if not _INTEGER.fullmatch(stripped):
        raise ApronInputError(f"{where} {shown(repr(text))}: give a whole number (digits 0-9)")
    return checked(int(stripped), bound, where)


_QUANTITY = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", re.ASCII)


def parse_quantity(
    text: str,
    units: Mapping[str, int],
    bound: Bound,
    where: str,
    *,
    example: str,
    asks: str = "a number and a unit",
    whole: bool = False,
) -> int:
    """'80GiB', '8.03B', '16060522496' -> a whole number within `bound`: the number times its
    unit (case-insensitive keys of `units`; "" when a bare number is allowed), computed
    exactly (decimal, never a float) and rounded down to a whole 1, or, with `whole`, refused
    when it is not whole."""
    if len(text.strip()) > MAX_OPTION_CHARS:
        raise _too_long(text.strip(), where)
    found = _QUANTITY.fullmatch(text)
    unit = found.group(2).lower() if found else None
    if found is None or unit not in units:
        names = ", ".join(u or "none" for u in sorted(units, key=units.__getitem__))
        raise ApronInputError(
            f"{where} {shown(repr(text))}: give {asks}, e.g. {example} "
            f"(units: {names}; case does not matter)"
        )
    from decimal import Decimal, InvalidOperation  # only for an option: a plan does not need it

    try:
        amount = Decimal(found.group(1)) * units[unit]
    except InvalidOperation as err:  # pragma: no cover - the pattern admits only plain digits
        raise ApronInputError(f"{where} {shown(repr(text))}: not a number") from err
    if whole and amount != amount.to_integral_value():
        raise ApronInputError(f"{where} {shown(repr(text))}: give {asks}, e.g. {example}")
    return checked(int(amount), bound, where)


def parse_fraction(text: str, where: str, *, why: str) -> float:
    """A fraction in (0, 1] from an option's text (a decimal number; NaN, Infinity and
    exponents are refused). `why` says whose bound it is."""
    stripped = text.strip()
    if len(stripped) > MAX_OPTION_CHARS:
        raise _too_long(stripped, where)
    if not re.fullmatch(r"[0-9]*\.?[0-9]+|[0-9]+\.", stripped, re.ASCII):
        raise ApronInputError(f"{where} {shown(repr(text))}: give a decimal fraction such as 0.9")
    value = float(stripped)
    if not 0 < value <= 1:
        raise ApronInputError(f"{where} {stripped}: must be more than 0 and at most 1 ({why})")
    return value
