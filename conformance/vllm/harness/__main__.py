"""python -m harness --source MIRROR [--commit SHA]: measure the vLLM this python imports (checked
against the mirror at the commit) and write conformance/vllm/<commit>/."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
VLLM_DIR = HERE.parent
PROJECT = VLLM_DIR.parent.parent


def _pinned_commit() -> str:
    return tomllib.loads((PROJECT / "pins" / "vllm.toml").read_text())["commit"]


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="conformance/vllm/run", description=__doc__)
    parser.add_argument("--source", required=True, help="vLLM git directory (mirror or clone)")
    parser.add_argument("--commit", default=None, help="commit measured (default: pins/vllm.toml)")
    parser.add_argument("--inputs", type=Path, default=VLLM_DIR / "inputs")
    parser.add_argument("--out", type=Path, default=VLLM_DIR)
    parser.add_argument("--only", nargs="*", default=None, help="input names to re-measure")
    parser.add_argument("--no-facts", action="store_true", help="keep the recorded facts.json")
    parser.add_argument(
        "--annotate-only",
        action="store_true",
        help="only apply accept_unknown.json to the recorded measurements (no vLLM needed)",
    )
    return parser.parse_args(argv)


def _line(row: dict) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def _write(path: Path, lines: list[str]) -> None:
    from harness import accepted

    entries = accepted.load(VLLM_DIR / "accept_unknown.json")
    rows = [accepted.annotate(json.loads(line), entries) for line in lines]
    path.write_text("".join(f"{x}\n" for x in sorted(_line(r) for r in rows)))


def main(argv=None) -> int:
    args = _arguments(argv)
    commit = args.commit or _pinned_commit()
    if args.annotate_only:
        path = args.out / commit / "measurements.jsonl"
        _write(path, path.read_text().splitlines())
        return 0
    from harness import cpu_shims, provenance

    compared = provenance.check(args.source, commit)
    cpu_shims.install()
    from harness import facts, measure

    folder = args.out / commit
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    inputs = sorted(args.inputs.glob("*.json"))
    if args.only:
        inputs = [p for p in inputs if p.stem in set(args.only) or p.name in set(args.only)]
    measured_names = {p.name for p in inputs}
    kept: list[str] = []
    environment_path = folder / "environment.json"
    not_measured: dict[str, list] = {}
    if args.only and (folder / "measurements.jsonl").is_file():
        for line in (folder / "measurements.jsonl").read_text().splitlines():
            if Path(json.loads(line)["input"]).name not in measured_names:
                kept.append(line)
        if environment_path.is_file():
            not_measured = json.loads(environment_path.read_text()).get("not_measured", {})
    lines = list(kept)
    for path in inputs:
        shutil.copy(path, folder / "inputs" / path.name)
        print(f"measuring {path.name}", file=sys.stderr, flush=True)
        found = measure.measure(path)
        for row in found.rows:
            lines.append(_line({"input": f"inputs/{path.name}", **row}))
        not_measured.pop(path.name, None)
        if found.not_measured:
            not_measured[path.name] = found.not_measured
    _write(folder / "measurements.jsonl", lines)
    if not args.no_facts:
        reported = facts.registry_facts()
        (folder / "facts.json").write_text(json.dumps(reported, indent=1, sort_keys=True) + "\n")
    import torch
    import transformers
    import vllm

    environment = {
        "engine": "vllm",
        "commit": commit,
        "measured": datetime.date.today().isoformat(),
        "vllm_version": vllm.__version__,
        "files_checked_against_commit": compared,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": "vLLM's CPU platform with the harness shims (harness/cpu_shims.py); "
        "no compiled vLLM kernels",
        "block_tokens": measure.BLOCK_TOKENS,
        "not_measured": dict(sorted(not_measured.items())),
    }
    environment_path.write_text(json.dumps(environment, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(lines)} figures to {folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
