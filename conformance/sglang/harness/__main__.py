"""python -m harness --source MIRROR [--commit SHA] [--out DIR] INPUT...: measure the SGLang this
python imports (checked to be that commit) and write the records (conformance/README.md)."""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import warnings
from importlib import metadata
from pathlib import Path

from harness import memory_fraction, model_figures, provenance, static_facts

HERE = Path(__file__).resolve().parent.parent  # conformance/sglang
ROOT = HERE.parent.parent
ACCEPTED = HERE / "accept_unknown.json"
ACCEPT_OR = " || "  # an unknown is accepted when its reason contains any of the alternatives


def input_name(path: Path) -> str:
    """inputs/<name>.json: a checkpoint directory's config.json is named by its directory."""
    return f"{path.parent.name}.json" if path.name == "config.json" else path.name


def pin_commit() -> str:
    for line in (ROOT / "pins" / "sglang.toml").read_text(encoding="utf-8").splitlines():
        if line.startswith("commit"):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit("pins/sglang.toml names no commit")


def accepted() -> list[dict]:
    """Hand-kept acceptances: an `unknown` apron may give for a figure, and the reason text."""
    return json.loads(ACCEPTED.read_text(encoding="utf-8")) if ACCEPTED.is_file() else []


def accept_for(name: str, figure: str, rules: list[dict]) -> str | None:
    """The reasons of every rule for this input and figure, joined by ACCEPT_OR."""
    reasons = [
        rule["reason"]
        for rule in rules
        if rule["input"] in (name, "*") and rule["figure"] in (figure, "*")
    ]
    return ACCEPT_OR.join(dict.fromkeys(reasons)) or None


def line(name: str, settings: dict, figure: str, value, refused: str, rules: list[dict]) -> str:
    row = {"input": f"inputs/{name}", "settings": settings, "figure": figure, "value": value}
    if refused:
        row["refused"] = refused
    reason = accept_for(name, figure, rules)
    if reason:
        row["accept_unknown"] = reason
    return json.dumps(row, sort_keys=True)


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("torch", "transformers", "sglang"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def annotate(out: Path, rules: list[dict]) -> int:
    """Re-apply accept_unknown.json to the recorded measurements (nothing is measured again)."""
    path = out / "measurements.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]
    lines = []
    for row in rows:
        row.pop("accept_unknown", None)
        reason = accept_for(row["input"].removeprefix("inputs/"), row["figure"], rules)
        if reason:
            row["accept_unknown"] = reason
        lines.append(json.dumps(row, sort_keys=True))
    path.write_text("\n".join(sorted(lines)) + "\n", encoding="utf-8")
    print(f"{len(lines)} figures annotated -> {path}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="conformance/sglang/run")
    parser.add_argument("--source", help="SGLang git repository (bare mirror)")
    parser.add_argument("--commit", default=None, help="full SHA (default: pins/sglang.toml)")
    parser.add_argument("--out", default=None, help="default conformance/sglang/<commit>")
    parser.add_argument("--no-fraction", action="store_true", help="skip mem_fraction_static")
    parser.add_argument(
        "--annotate-only", action="store_true", help="only re-apply accept_unknown.json"
    )
    parser.add_argument("inputs", nargs="*", type=Path)
    args = parser.parse_args(argv)
    commit = args.commit or pin_commit()
    if args.annotate_only:
        return annotate(Path(args.out) if args.out else HERE / commit, accepted())
    if not args.source or not args.inputs:
        parser.error("--source and at least one input are needed to measure")
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING - 1)  # the registry's import errors are read by a handler
    import sglang

    package = Path(sglang.__file__).resolve().parent
    checked = provenance.check_installed(package, args.source, commit)
    out = Path(args.out) if args.out else HERE / commit
    (out / "inputs").mkdir(parents=True, exist_ok=True)
    logging.disable(logging.NOTSET)
    logging.getLogger().setLevel(logging.ERROR)
    logging.getLogger("sglang.srt.models.registry").setLevel(logging.WARNING)
    facts = static_facts.static_facts(ROOT / "generated" / "sglang")
    logging.getLogger("sglang.srt.models.registry").setLevel(logging.ERROR)
    rules = accepted()
    lines: list[str] = []
    not_measured: dict[str, str] = {}
    server_args = model_figures.default_server_args()
    for source in sorted(set(args.inputs), key=input_name):
        name = input_name(source)
        shutil.copyfile(source, out / "inputs" / name)
        with tempfile.TemporaryDirectory() as model_dir:
            shutil.copyfile(source, Path(model_dir) / "config.json")
            try:
                rows = model_figures.measure(model_dir, server_args)
            except model_figures.NotMeasurable as why:
                (out / "inputs" / name).unlink()
                not_measured[name] = str(why)
                print(f"{name}: not measured ({why})", file=sys.stderr)
                continue
            if rows and rows[0][1] != "model_config" and not args.no_fraction:
                rows += memory_fraction.measure(model_dir)
        for settings, figure, value, refused in rows:
            lines.append(line(name, settings, figure, value, refused, rules))
        print(f"{name}: {len(rows)} figures", file=sys.stderr)
    (out / "measurements.jsonl").write_text("\n".join(sorted(lines)) + "\n", encoding="utf-8")
    (out / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    environment = {
        "engine": "sglang",
        "commit": commit,
        "commit_date": provenance.commit_date(args.source, commit),
        "measured": datetime.date.today().isoformat(),
        "versions": versions(),
        "installed_files_checked": checked,
        "platform": f"{platform.system()} {platform.machine()}, CPU only",
        "environment_variables": sorted(k for k in os.environ if k.startswith("SGLANG_")),
        "not_measured": not_measured,
        "refused": sorted(
            {json.loads(x)["input"] for x in lines if '"figure": "model_config"' in x}
        ),
    }
    (out / "environment.json").write_text(json.dumps(environment, indent=1, sort_keys=True) + "\n")
    print(f"{len(lines)} figures, {len(facts['registry'])} registry architectures -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
