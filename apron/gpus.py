"""GPUs by name for `--gpu`: the memory the driver reports for each part (what the engines size
their memory fraction from, a little under the marketed figure), with the source of each figure.

Figures are nvidia-smi's memory total (NVML, in MiB), as published:
- MODAL: "Why does an NVIDIA H100 80GB card offer 85.52 GB?" (Modal, thundergolfer.com/blog/
  nvidia-gpu-memory-capacity): the NVML totals of H200, H100, A100 80GB and 40GB, A10, L40S, L4, T4.
- the nvidia-smi output quoted in public issue reports, named per row.
A part not listed is refused with the names that are; --gpu-memory takes any figure."""

from __future__ import annotations

import re

from apron.errors import ApronInputError
from apron.record import Record
from apron.terminal import shown

MIB = 2**20
MODAL = "https://thundergolfer.com/blog/nvidia-gpu-memory-capacity (NVML totals)"


class Gpu(Record):
    """One GPU part: its short name, its name as torch reports it (vLLM tests that name), the
    NVML memory total in MiB, the other names apron accepts for it, and the source."""

    short: str
    name: str
    memory_mib: int
    aliases: tuple[str, ...]
    source: str

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB


GPUS = (
    Gpu(
        short="H200",
        name="NVIDIA H200",
        memory_mib=143_771,
        aliases=("h200", "h200sxm", "h200141gb"),
        source=MODAL,
    ),
    Gpu(
        short="H100",
        name="NVIDIA H100 80GB HBM3",
        memory_mib=81_559,
        aliases=("h100", "h100sxm", "h10080gb", "h100sxm80gb"),
        source=MODAL,
    ),
    Gpu(
        short="A100-80GB",
        name="NVIDIA A100-SXM4-80GB",
        memory_mib=81_920,
        aliases=("a10080gb", "a100sxm80gb", "a100sxm480gb"),
        source=MODAL,
    ),
    Gpu(
        short="A100-40GB",
        name="NVIDIA A100-SXM4-40GB",
        memory_mib=40_960,
        aliases=("a10040gb", "a100sxm40gb", "a100sxm440gb"),
        source=MODAL,
    ),
    Gpu(
        short="A10",
        name="NVIDIA A10",
        memory_mib=23_028,
        aliases=("a10", "a10g", "a1024gb"),
        source=MODAL,
    ),
    Gpu(
        short="L40S",
        name="NVIDIA L40S",
        memory_mib=46_068,
        aliases=("l40s", "l40s48gb"),
        source=MODAL,
    ),
    Gpu(short="L4", name="NVIDIA L4", memory_mib=23_034, aliases=("l4", "l424gb"), source=MODAL),
    Gpu(short="T4", name="Tesla T4", memory_mib=15_360, aliases=("t4", "t416gb"), source=MODAL),
    Gpu(
        short="RTX 4090",
        name="NVIDIA GeForce RTX 4090",
        memory_mib=24_564,
        aliases=("rtx4090", "4090", "geforcertx4090"),
        source="nvidia-smi in https://github.com/RLinf/RLinf/issues/255",
    ),
    Gpu(
        short="RTX 3090",
        name="NVIDIA GeForce RTX 3090",
        memory_mib=24_576,
        aliases=("rtx3090", "3090", "geforcertx3090"),
        source="nvidia-smi in https://github.com/noonghunna/club-3090/issues/1128",
    ),
    Gpu(
        short="RTX 5090",
        name="NVIDIA GeForce RTX 5090",
        memory_mib=32_607,
        aliases=("rtx5090", "5090", "geforcertx5090"),
        source="nvidia-smi in https://github.com/noonghunna/club-3090/issues/1261",
    ),
)
# names that fit several parts: say which ones
AMBIGUOUS = {"a100": ("A100-80GB", "A100-40GB")}


def _key(text: str) -> str:
    key = re.sub(r"[^a-z0-9]", "", text.lower())
    return key.removeprefix("nvidia").removeprefix("tesla")


def gpu(name: str) -> Gpu:
    """The part `name` names ("H100", "a100-80gb", "RTX 4090"); one clear error otherwise."""
    key = _key(name)
    for part in GPUS:
        if key in part.aliases or key in (_key(part.name), _key(part.short)):
            return part
    if key in AMBIGUOUS:
        raise ApronInputError(
            f"--gpu {shown(repr(name))} names more than one part: {' or '.join(AMBIGUOUS[key])}"
        )
    names = ", ".join(part.short for part in GPUS)
    raise ApronInputError(
        f"--gpu {shown(repr(name))} is not in apron's GPU table ({names}); give --gpu-memory with the "
        "memory nvidia-smi reports instead (e.g. 81559MiB)"
    )


def table_lines() -> list[str]:
    """The table for people (README, --help): name, MiB, source."""
    return [f"{p.short}: {p.memory_mib:,} MiB ({p.source})" for p in GPUS]
