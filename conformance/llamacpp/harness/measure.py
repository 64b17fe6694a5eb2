"""Measure what llama.cpp allocates, at the commit its build was made from: check that the
build's source tree is that commit (every file of src/, include/, ggml/ and the converter
against the mirror), compile our probe against the build, make each tiny checkpoint
(models.py), convert it with the pin's own converter (convert.py), run the probe at every
setting, and write conformance/llamacpp/<commit>/: inputs (config.json, GGUF header only),
measurements.jsonl, facts.json, environment.json.

Run with the measuring environment's Python (torch, transformers, sentencepiece, tokenizers):
    python measure.py --mirror M --build B --commit C --out DIR --work WORK [--only a,b]"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402

CHECKED_TREES = ("src", "include", "ggml/src", "ggml/include", "conversion", "gguf-py/gguf")
CONTEXTS = (0, 256, 1000, 4096)
SEQS = (1, 4)
CACHE_TYPES = ("f16", "q8_0")
# settings beyond the grid: flash attention off, one KV buffer for all sequences, a full-size
# SWA cache (llama_context_default_params' swa_full = true; common_params' false)
EXTRA_SETTINGS = (
    {"n_ctx": 4096, "n_seq": 1, "fa": "off"},
    {"n_ctx": 4096, "n_seq": 4, "kv_unified": 1},
    {"n_ctx": 4096, "n_seq": 1, "swa_full": 1},
    {"n_ctx": 4096, "n_seq": 4, "swa_full": 1},
)
# figures apron may leave unknown, by input, with the reason's text: a converter step the
# extracted facts do not cover (apron says so instead of sizing another file)
ACCEPTED_UNKNOWNS = {
    # FalconH1Model and GraniteHybridModel override find_hparam (it also tries mamba_-prefixed
    # keys) and take their layer lists from methods: code the extracted facts do not cover, so
    # the reason names the class
    "falcon-h1.json": "FalconH1Model",
    "granite-hybrid.json": "GraniteHybridModel",
}
DEFAULT_SETTINGS = {
    "n_ctx": 0,
    "n_seq": 1,
    "type_k": "f16",
    "type_v": "f16",
    "fa": "auto",
    "kv_unified": 0,
    "swa_full": 0,
}


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=False, capture_output=True, text=True, **kwargs)


# ---------------------------------------------------------------- the commit check


def source_dir(build: Path) -> Path:
    cache = (build / "CMakeCache.txt").read_text(encoding="utf-8")
    found = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.MULTILINE)
    if found is None:
        sys.exit(f"{build}/CMakeCache.txt names no source directory (CMAKE_HOME_DIRECTORY)")
    return Path(found.group(1))


def check_commit(mirror: Path, commit: str, source: Path) -> int:
    """Every file of CHECKED_TREES at `commit` has the same blob in `source`, and `source` has
    no other file there: the build is that commit. Exits naming the first difference."""
    listing = run(["git", "-C", str(mirror), "ls-tree", "-r", commit, "--", *CHECKED_TREES])
    if listing.returncode:
        sys.exit(f"git ls-tree {commit} in {mirror} failed: {listing.stderr.strip()}")
    expected = {}
    for line in listing.stdout.splitlines():
        meta, path = line.split("\t", 1)
        expected[path] = meta.split()[2]
    paths = sorted(expected)
    hashed = run(
        ["git", "hash-object", "--no-filters", "--stdin-paths"],
        input="\n".join(str(source / p) for p in paths) + "\n",
    )
    if hashed.returncode:
        sys.exit(f"{source} is not the source of commit {commit}: {hashed.stderr.strip()}")
    for path, blob in zip(paths, hashed.stdout.split(), strict=True):
        if blob != expected[path]:
            sys.exit(
                f"{source}/{path} differs from commit {commit} (blob {blob} != {expected[path]})"
            )
    present = {
        str(p.relative_to(source))
        for tree in CHECKED_TREES
        for p in (source / tree).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    }
    extra = sorted(present - set(expected) - {p for p in present if ".egg-info" in p})
    if extra:
        sys.exit(f"{source} has files commit {commit} does not: {', '.join(extra[:5])}")
    return len(paths)


# ---------------------------------------------------------------- probe


def build_probe(source: Path, build: Path, work: Path) -> Path:
    out = work / "probe"
    compiled = run(
        [
            "g++",
            "-std=c++17",
            "-O1",
            "-o",
            str(out),
            str(HERE / "probe.cpp"),
            f"-I{source / 'include'}",
            f"-I{source / 'src'}",
            f"-I{source / 'ggml' / 'include'}",
            f"-L{build / 'bin'}",
            "-lllama",
            "-lggml",
            "-lggml-base",
            f"-Wl,-rpath,{build / 'bin'}",
        ]
    )
    if compiled.returncode:
        sys.exit(f"compiling the probe failed:\n{compiled.stderr}")
    return out


def probe(binary: Path, gguf: Path, settings: dict) -> dict:
    values = {**DEFAULT_SETTINGS, **settings}
    done = run([str(binary), str(gguf), *(f"{k}={v}" for k, v in values.items())])
    if done.returncode:
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        tail = next((line for line in lines if "GGML_ASSERT" in line or "error" in line), lines[-1])
        return {"refused": f"aborted: {tail.strip()}", "stage": "abort"}
    return json.loads(done.stdout)


# ---------------------------------------------------------------- GGUF header


def header_bytes(gguf: Path) -> bytes:
    """The file up to the end of its tensor-info table: what apron reads."""
    sys.path.insert(0, str(Path(models.__file__).parent))
    import struct

    data = gguf.read_bytes()
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)

    def string(p: int) -> int:
        (n,) = struct.unpack_from("<Q", data, p)
        return p + 8 + n

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def value(p: int, kind: int) -> int:
        if kind == 8:
            return string(p)
        if kind == 9:
            (inner,) = struct.unpack_from("<I", data, p)
            (count,) = struct.unpack_from("<Q", data, p + 4)
            p += 12
            for _ in range(count):
                p = value(p, inner)
            return p
        return p + sizes[kind]

    for _ in range(n_kv):
        pos = string(pos)
        (kind,) = struct.unpack_from("<I", data, pos)
        pos = value(pos + 4, kind)
    for _ in range(n_tensors):
        pos = string(pos)
        (n_dims,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8 * n_dims + 4 + 8
    return data[:pos]


# ---------------------------------------------------------------- records


def figures_of(result: dict) -> dict:
    """The probe's answer as the figures measurements.jsonl records."""
    if "refused" in result:
        return {}
    kv = sum(t["nbytes"] for t in result["tensors"] if t["cache"].startswith("kv"))
    state = sum(t["nbytes"] for t in result["tensors"] if t["cache"] == "rs")
    return {
        "memory_class": result["memory_class"],
        "kv_bytes": kv,
        "state_bytes": state,
        "n_ctx": result["n_ctx"],
        "kv_cells": result["cells"].get("kv"),
        "kv_cells_swa": result["cells"].get("kv_swa"),
    }


def cross_check(result: dict) -> list[str]:
    """llama.cpp's own log says the same sizes (MiB to 2 decimals) as the tensors we summed."""
    problems = []
    sizes = re.compile(r"(llama_kv_cache|llama_memory_recurrent): size = +([\d.]+) MiB")
    logged = [
        float(m.group(2)) for line in result.get("log", ()) for m in [sizes.search(line)] if m
    ]
    by_cache: dict[str, int] = {}
    for t in result.get("tensors", ()):
        by_cache[t["cache"]] = by_cache.get(t["cache"], 0) + t["nbytes"]
    ours = sorted(round(v / 1024 / 1024, 2) for v in by_cache.values())
    if sorted(logged) != ours and not (
        logged and all(abs(a - b) <= 0.01 for a, b in zip(sorted(logged), ours, strict=False))
    ):
        problems.append(f"log sizes {sorted(logged)} MiB, tensors {ours} MiB")
    if result.get("context_buffer_bytes", 0) < sum(by_cache.values()):
        problems.append("the memory buffers hold fewer bytes than the tensors")
    return problems


def settings_grid(spec: models.Spec) -> list[dict]:
    grid = [
        {"n_ctx": ctx, "n_seq": seq, "type_k": t, "type_v": t}
        for ctx in (*CONTEXTS, *spec.extra_contexts)
        for seq in SEQS
        for t in CACHE_TYPES
    ]
    return grid + [dict(s) for s in EXTRA_SETTINGS]


def record_settings(settings: dict) -> dict:
    """The settings as a record states them: every probe setting, named as apron's options."""
    values = {**DEFAULT_SETTINGS, **settings}
    return {
        "context": values["n_ctx"],
        "n_seq": values["n_seq"],
        "cache_type_k": values["type_k"],
        "cache_type_v": values["type_v"],
        "flash_attn": values["fa"],
        "kv_unified": bool(values["kv_unified"]),
        "swa_full": bool(values["swa_full"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    source = source_dir(args.build)
    checked = check_commit(args.mirror, args.commit, source)
    print(f"build source {source}: {checked} files match {args.commit}", flush=True)
    args.work.mkdir(parents=True, exist_ok=True)
    binary = build_probe(source, args.build, args.work)
    tokenizer = models.make_tokenizer(args.work / "tokenizer")
    inputs = args.out / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    only = {n for n in args.only.split(",") if n}
    lines: list[dict] = []
    facts: dict[str, dict] = {}
    unmeasured: dict[str, str] = {}
    for spec in models.SPECS:
        if only and spec.name not in only:
            continue
        hf = args.work / "hf" / spec.name
        gguf = args.work / "gguf" / f"{spec.name}.gguf"
        try:
            models.make_checkpoint(spec, hf, tokenizer)
        except Exception as err:  # noqa: BLE001 - a checkpoint transformers cannot build
            unmeasured[spec.name] = f"transformers cannot build it: {type(err).__name__}: {err}"
            print(f"{spec.name}: not measured ({unmeasured[spec.name]})", flush=True)
            continue
        gguf.parent.mkdir(parents=True, exist_ok=True)
        converted = run([sys.executable, str(HERE / "convert.py"), str(source), str(hf), str(gguf)])
        if converted.returncode:
            tail = (converted.stderr.strip().splitlines() or ["?"])[-1]
            unmeasured[spec.name] = f"the converter refuses it: {tail}"
            print(f"{spec.name}: not measured ({unmeasured[spec.name]})", flush=True)
            continue
        config_input = f"inputs/{spec.name}.json"
        gguf_input = f"inputs/{spec.name}.gguf"
        shutil.copy(hf / "config.json", args.out / config_input)
        (args.out / gguf_input).write_bytes(header_bytes(gguf))
        first = probe(binary, gguf, {})
        if "refused" in first and first.get("stage") == "model":
            for name in (gguf_input, config_input):
                lines.append(
                    {
                        "input": name,
                        "settings": record_settings({}),
                        "figure": "load",
                        "value": None,
                        "refused": first["refused"],
                    }
                )
            print(f"{spec.name}: refused: {first['refused']}", flush=True)
            continue
        for settings in settings_grid(spec):
            result = probe(binary, gguf, settings)
            stated = record_settings(settings)
            if "refused" in result:
                lines.append(
                    {
                        "input": gguf_input,
                        "settings": stated,
                        "figure": "context",
                        "value": None,
                        "refused": result["refused"],
                    }
                )
                continue
            problems = cross_check(result)
            if problems:
                sys.exit(f"{spec.name} {settings}: the log disagrees: {'; '.join(problems)}")
            for figure, value in figures_of(result).items():
                if value is None:
                    continue
                lines.append(
                    {"input": gguf_input, "settings": stated, "figure": figure, "value": value}
                )
                hf_path = stated["cache_type_k"] == stated["cache_type_v"] == "f16" and not (
                    stated["kv_unified"] or stated["swa_full"] or stated["flash_attn"] != "auto"
                )
                if hf_path and figure in ("memory_class", "kv_bytes", "state_bytes"):
                    line = {
                        "input": config_input,
                        "settings": stated,
                        "figure": figure,
                        "value": value,
                    }
                    accepted = ACCEPTED_UNKNOWNS.get(f"{spec.name}.json")
                    lines.append({**line, "accept_unknown": accepted} if accepted else line)
        if "architecture" in first:
            facts[first["architecture"]] = {
                "llm_arch_is_recurrent": first["is_recurrent"],
                "llm_arch_is_hybrid": first["is_hybrid"],
                "llm_arch_is_diffusion": first["is_diffusion"],
            }
        print(f"{spec.name}: {len(settings_grid(spec))} settings measured", flush=True)
    old = args.out / "measurements.jsonl"
    kept = []
    if only and old.is_file():  # a partial run replaces only the inputs it measured
        names = {f"inputs/{n}." for n in only}
        kept = [
            json.loads(line)
            for line in old.read_text(encoding="utf-8").splitlines()
            if not any(json.loads(line)["input"].startswith(n) for n in names)
        ]
    rows = sorted({json.dumps(r, sort_keys=True) for r in kept + lines})
    old.write_text("\n".join(rows) + "\n", encoding="utf-8")
    facts_path = args.out / "facts.json"
    known = json.loads(facts_path.read_text()) if only and facts_path.is_file() else {}
    known.update(facts)
    facts_path.write_text(json.dumps(known, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    environment_path = args.out / "environment.json"
    environment = (
        json.loads(environment_path.read_text()) if only and environment_path.is_file() else {}
    )
    import torch
    import transformers

    environment.update(
        {
            "engine": "llamacpp",
            "commit": args.commit,
            "measured": date.today().isoformat(),
            "build": "libllama built from the commit's source (cmake, GGML_NATIVE=OFF, CPU backend)",
            "files_checked_against_the_commit": checked,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "probe": "conformance/llamacpp/harness/probe.cpp",
            "context_params": "llama_context_default_params() with the settings of each record "
            "(n_ctx, n_seq_max, type_k, type_v, flash_attn_type, kv_unified, swa_full)",
        }
    )
    environment.setdefault("not_measured", {}).update(unmeasured)
    for name in only:
        if name not in unmeasured:
            environment["not_measured"].pop(name, None)
    environment_path.write_text(
        json.dumps(environment, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    print(f"wrote {len(rows)} measurements to {old}", flush=True)


if __name__ == "__main__":
    main()
