"""The engines' own flags and values, read as each engine reads them: vLLM's --max-model-len
(human_readable_int_or_auto), --kv-cache-dtype (CacheDType), --block-size,
--kv-cache-memory-bytes and --pipeline-parallel-size; llama.cpp's -c -np -ctk -ctv -fa -kvu
--swa-full -b -ub. The values vLLM's source spells as literals come
from generated/vllm `option_literals`; a value an engine accepts that apron does not model is
refused saying so, never ignored.

Numbers are checked by apron.bounds, the one number check, with each option's engine bound."""

from __future__ import annotations

import re

from apron import bounds
from apron.constraints import EngineConstraints
from apron.deployment import Deployment, LlamaCppFlags
from apron.errors import ApronInputError
from apron.record import Record
from apron.terminal import shown

LITERALS = "option_literals"
CACHE_DTYPE = "CacheDType"
DECIMAL, BINARY = "human_readable_int.decimal", "human_readable_int.binary"
AUTO = "human_readable_int_or_auto.auto"
# vLLM --kv-cache-dtype values apron sizes -> its own dtype names (bytes per element the same);
# the other CacheDType members have layouts apron does not model
CACHE_DTYPES = {
    "auto": "auto",
    "bfloat16": "bf16",
    "float16": "fp16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_inc": "fp8",  # Intel Gaudi's fp8: 1 byte per element
}
NOT_MODELLED_DTYPES = {
    "fp8_ds_mla": "DeepSeek's 656-byte packed MLA layout",
    "nvfp4": "packed fp4 values with fp8 block scales per head",
}
FLASH_ATTN = ("on", "off", "auto")
AUTO_LENGTH = "auto"  # --max-model-len auto: vLLM fits max_model_len to memory  # llama.cpp -fa [on|off|auto] (common/arg.cpp)


def _rows(vllm: EngineConstraints | None, symbol: str) -> list:
    if vllm is None:
        return []
    return sorted((r for r in vllm.rows(LITERALS) if r.symbol == symbol), key=lambda r: r.order)


def max_model_len(text: str, option: str, vllm: EngineConstraints | None) -> int | None:
    """vLLM's human_readable_int_or_auto: `auto` / `-1` -> None (fit to memory), `32k` ->
    32,000, `32K` -> 32,768, `25.6k` -> 25,600; decimals only with a decimal suffix. The
    suffixes and auto spellings are vLLM's own (extracted); the pattern and the decimal rule are
    its code's (vllm/utils/argparse_utils.py, cited)."""
    value = bounds.check_length(text, option)
    autos = {r.key.lower() for r in _rows(vllm, AUTO)} or {"-1", "auto"}
    if value.lower() in autos:
        return None
    decimal = {r.key: int(r.value) for r in _rows(vllm, DECIMAL)}
    binary = {r.key: int(r.value) for r in _rows(vllm, BINARY)}
    suffixes = "".join(sorted({*decimal, *binary}))
    found = (
        re.fullmatch(rf"([0-9]+(?:\.[0-9]+)?)([{re.escape(suffixes)}])", value, re.ASCII)
        if suffixes
        else None
    )
    if found:
        number, suffix = found.groups()
        if suffix in decimal:
            count = int(float(number) * decimal[suffix])
        elif "." in number:
            raise ApronInputError(
                f"{option} {shown(repr(text))}: decimals are not allowed with binary suffixes like "
                f"{suffix} (vLLM's human_readable_int); did you mean {number}{suffix.lower()}?"
            )
        else:
            count = int(number) * binary[suffix]
    elif re.fullmatch(r"-?[0-9]+", value, re.ASCII):
        count = int(value)
    else:
        suffix_list = ", ".join(sorted(decimal) + sorted(binary)) or "none extracted"
        raise ApronInputError(
            f"{option} {shown(repr(text))}: give a number of tokens (32768), one with vLLM's "
            f"suffixes ({suffix_list}: 32k is 32,000, 32K is 32,768), or auto"
        )
    return count  # the caller checks it against its bound


def byte_count(text: str, option: str, vllm: EngineConstraints | None) -> int:
    """Bytes as vLLM's human_readable_int reads them (1G = 2**30, 1g = 10**9), or with apron's
    units (20GiB, 20GB)."""
    value = text.strip()
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?[a-zA-Z]{2,3}", value, re.ASCII):
        from apron.capacity import parse_memory

        return parse_memory(value)
    count = max_model_len(value, option, vllm)
    if count is None:
        raise ApronInputError(f"{option} {shown(repr(text))}: give a number of bytes (1G, 20GiB)")
    return bounds.checked(count, bounds.BYTES, option)


def kv_cache_dtype(text: str, vllm: EngineConstraints | None) -> str:
    """apron's KV dtype name for vLLM's --kv-cache-dtype value (a CacheDType member, extracted),
    or apron's own (bf16, fp16, fp8, fp32); a member apron does not size is refused."""
    value = text.strip()
    if value in ("bf16", "fp16", "fp8", "fp32"):
        return value
    members = [r.key for r in _rows(vllm, CACHE_DTYPE)]
    if members and value not in members:
        raise ApronInputError(
            f"unknown KV dtype {shown(repr(text))}: not one of vLLM's CacheDType values "
            f"({', '.join(members)}) nor apron's bf16, fp16, fp8, fp32"
        )
    if value in CACHE_DTYPES:
        return CACHE_DTYPES[value]
    why = NOT_MODELLED_DTYPES.get(value, "its packed layout with per-block scales")
    raise ApronInputError(
        f"--kv-cache-dtype {value}: vLLM accepts it (CacheDType), but apron does not model its "
        f"cache ({why}); give auto, bfloat16, float16 or an fp8 type"
    )


def positive(text: str, option: str, bound=None) -> int:
    """A whole number within `bound` (the engines' bound for the option; apron.bounds)."""
    return bounds.parse_int(text, bound or bounds.BATCH, option)


def flash_attn(text: str) -> str:
    value = text.strip().lower()
    if value not in FLASH_ATTN:
        raise ApronInputError(f"-fa {shown(repr(text))}: llama.cpp takes on, off or auto")
    return value


def check_flash_attn(flags: LlamaCppFlags, quantized_v: bool) -> None:
    """llama.cpp refuses a quantized V cache without flash attention (llama_init_from_model:
    "V cache quantization requires flash_attn", src/llama-context.cpp; cited)."""
    if quantized_v and flags.flash_attn == "off":
        raise ApronInputError(
            f"-ctv {shown(flags.type_v)} with -fa off: llama.cpp refuses it (V cache quantization "
            "requires flash_attn)"
        )


class EngineOptions(Record):
    """The engine flags as given on the command line (text; None: not given)."""

    block_size: str | None = None
    kv_cache_memory_bytes: str | None = None
    pipeline_parallel_size: str | None = None
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    flash_attn: str | None = None
    kv_unified: bool | None = None
    swa_full: bool | None = None
    batch_size: str | None = None
    ubatch_size: str | None = None

    def llamacpp(self) -> LlamaCppFlags:
        return LlamaCppFlags(
            type_k=self.cache_type_k,
            type_v=self.cache_type_v,
            flash_attn=flash_attn(self.flash_attn) if self.flash_attn is not None else "auto",
            kv_unified=self.kv_unified,
            swa_full=self.swa_full,
            n_batch=positive(self.batch_size, "-b", bounds.LLAMACPP_BATCH)
            if self.batch_size is not None
            else None,
            n_ubatch=positive(self.ubatch_size, "-ub", bounds.LLAMACPP_BATCH)
            if self.ubatch_size is not None
            else None,
        )

    def deployment(self, vllm: EngineConstraints | None = None) -> Deployment:
        """The settings they give (checked); GPU, fraction and batch are set by the caller."""
        memory = None
        if self.kv_cache_memory_bytes is not None:
            memory = byte_count(self.kv_cache_memory_bytes, "--kv-cache-memory-bytes", vllm)
        return Deployment(
            pp=positive(self.pipeline_parallel_size, "--pipeline-parallel-size", bounds.PIPELINE)
            if self.pipeline_parallel_size is not None
            else 1,
            block_size=positive(self.block_size, "--block-size", bounds.BLOCK_SIZE)
            if self.block_size is not None
            else None,
            kv_cache_memory_bytes=memory,
            llamacpp=self.llamacpp(),
        )
