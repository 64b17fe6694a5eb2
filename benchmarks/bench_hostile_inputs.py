"""Benchmark: apron on the costliest inputs its caps allow, each in a fresh process.

Run: python benchmarks/bench_hostile_inputs.py [--runs N]

For each input (built in a temp folder, never committed) it runs `apron` in a new interpreter
and reports the median wall and CPU seconds and the peak RSS (VmHWM), beside a baseline run on
a small input (the interpreter and its imports). Goal (issue 35): every input within a few
seconds of CPU and a few hundred MB: at most GOAL_CPU_SECONDS over the baseline and
GOAL_PEAK_MB peak. Exits 1 when an input misses the goal, or does not end with exit 0 or 2.

  baseline      apron gguf on a 6-key header
  gguf-caps     65,536 keys, 2,097,152 array elements (64 arrays kept, one skipped), 8 MB
  config-16mb   a config.json of 15.8 MB (one string of escapes, under the 16,000,000 B cap)
  config-lists  a config.json holding 900,000 small lists
  header-100mb  a safetensors header of 99 MB (the safetensors library's cap is 100 MB)
  shards-4096   4,096 .safetensors files, every header read
  sparse-3gb    a 3 GB sparse config.json (refused before it is read)"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from apron.engines.llamacpp.gguf_header import MAX_ITEMS, MAX_KEPT_ITEMS, MAX_KEYS  # noqa: E402
from apron.weights import MAX_SHARDS  # noqa: E402
from tests.hostile import gguf_bytes as g  # noqa: E402

GOAL_CPU_SECONDS = 5.0
GOAL_PEAK_MB = 400.0
LLAMA = json.loads((REPO / "apron" / "samples" / "llama-3.1-8b.json").read_text())

CHILD = r"""
import os, resource, sys
sys.argv = ["apron", *sys.argv[1:]]
code = 0
try:
    from apron.command_line.cli import main
    main()
except SystemExit as done:
    code = done.code if isinstance(done.code, int) else 1
finally:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write(f"\nBENCH {peak} {usage.ru_utime + usage.ru_stime} {code}\n")
"""


def _gguf_at_caps() -> bytes:
    pairs = [*g.llama_pairs()]
    kept = MAX_KEPT_ITEMS // 1024
    pairs += [g.kv(f"k{i}", g.array(g.STR, ["ab"] * 1024)) for i in range(kept)]
    rest = MAX_ITEMS - kept * 1024
    body = struct.pack("<i", g.ARR) + struct.pack("<i", g.STR) + struct.pack("<Q", rest)
    pairs.append(g.kv("tokenizer.ggml.tokens", body + g.string("x") * rest))
    pairs += [g.kv(f"p{i}", g.scalar(g.U8, 0)) for i in range(MAX_KEYS - len(pairs))]
    return g.header(pairs)


def _safetensors(path: Path, header: dict, data: bytes) -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def build(root: Path) -> dict[str, list[str]]:
    """Each input's folder and the apron arguments that read it."""
    cases: dict[str, list[str]] = {}
    (root / "small.gguf").write_bytes(g.header(g.llama_pairs()))
    cases["baseline"] = ["gguf", str(root / "small.gguf"), "-c", "8192"]
    (root / "caps.gguf").write_bytes(_gguf_at_caps())
    cases["gguf-caps"] = ["gguf", str(root / "caps.gguf"), "-c", "8192"]
    for name, value in (("config-16mb", "\\" * 7_900_000), ("config-lists", [[0]] * 900_000)):
        folder = root / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**LLAMA, "x": value}))
        cases[name] = ["plan", str(folder), "-c", "8192"]
    folder = root / "header-100mb"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    header = {"__metadata__": {"x": "a" * 99_000_000}}
    header["w"] = {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}
    _safetensors(folder / "model.safetensors", header, b"\0" * 4)
    cases["header-100mb"] = ["plan", str(folder), "-c", "8192"]
    folder = root / "shards-4096"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    one = {"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}
    for i in range(MAX_SHARDS):
        _safetensors(folder / f"x{i}.safetensors", one, b"\0\0")
    cases["shards-4096"] = ["plan", str(folder), "-c", "8192", "--gpu-memory", "80GiB"]
    folder = root / "sparse-3gb"
    folder.mkdir()
    with (folder / "config.json").open("wb") as handle:
        handle.truncate(3_000_000_000)
    cases["sparse-3gb"] = ["plan", str(folder)]
    return cases


def measure(args: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak MB, exit code) of one fresh `apron ARGS`."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("APRON_DEBUG", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env, check=False
    )
    wall = time.perf_counter() - started
    line = next(x for x in reversed(done.stderr.splitlines()) if x.startswith("BENCH "))
    _, peak, cpu, code = line.split()
    return wall, float(cpu), int(peak) / 1024, int(code)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    print(f"load average {os.getloadavg()[0]:.2f}; {runs} runs each, medians")
    missed = []
    with tempfile.TemporaryDirectory() as temp:
        cases = build(Path(temp))
        base_cpu = None
        for name, args in cases.items():
            results = [measure(args) for _ in range(runs)]
            wall = statistics.median(r[0] for r in results)
            cpu = statistics.median(r[1] for r in results)
            peak = max(r[2] for r in results)
            codes = sorted({r[3] for r in results})
            base_cpu = cpu if base_cpu is None else base_cpu
            over = cpu - base_cpu
            ok = codes in ([0], [2]) and over <= GOAL_CPU_SECONDS and peak <= GOAL_PEAK_MB
            print(
                f"  {name:14} exit {'/'.join(map(str, codes)):3} wall {wall:6.2f} s  cpu "
                f"{cpu:6.2f} s (+{over:5.2f} over baseline)  peak {peak:7.1f} MB"
                f"{'' if ok else '  MISSED'}"
            )
            if not ok:
                missed.append(name)
    print(
        f"goal: at most {GOAL_CPU_SECONDS:g} CPU seconds over the baseline and {GOAL_PEAK_MB:g} MB "
        f"peak, exit 0 or 2: {'met' if not missed else 'missed by ' + ', '.join(missed)}"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
