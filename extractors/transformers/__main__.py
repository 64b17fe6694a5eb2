"""`python -m apron.extractors.transformers`: read transformers' configuration classes from the pinned
sdist (pins/transformers.toml) and vLLM's own from the vLLM pin, and write
generated/transformers/ (all files or none). `--check` compares instead of writing."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from apron.extractors.errors import ExtractionError
from apron.extractors.git import GitSource
from apron.extractors.pins import load_pin
from apron.extractors.runner.pipeline import SOURCE_ENV, find_project
from apron.extractors.runner.writer import JOURNAL_NAME, project_lock, write_changes_atomically
from apron.extractors.transformers.extract import (
    VLLM_CONFIGS_DIR,
    VLLM_REGISTRY_PATH,
    transformers_tables,
    vllm_tables,
)
from apron.extractors.transformers.release import (
    blob_of,
    configuration_modules,
    load_release_pin,
    sdist_bytes,
)
from apron.extractors.transformers.render import render_files

FOLDER = "transformers"


def render_project(root: Path, source: Path | None, vllm_source: str | None) -> dict[str, str]:
    pins = root / "pins"
    pin = load_release_pin(pins)
    data = sdist_bytes(pin, source)
    modules = configuration_modules(data, str(source or pin.requirement))
    ours = transformers_tables(modules, {p: blob_of(t) for p, t in modules.items()})
    vllm_pin = load_pin(pins, "vllm")
    chosen = vllm_source or os.environ.get(SOURCE_ENV.format(engine="VLLM")) or vllm_pin.url
    with GitSource("vllm", chosen) as git:
        snapshot = git.snapshot(vllm_pin.commit)
        paths = [p for p in snapshot.list_files(VLLM_CONFIGS_DIR) if p.endswith(".py")]
        snapshot.prefetch([*paths, VLLM_REGISTRY_PATH])
        files = {p: snapshot.read_text(p) for p in paths}
        blobs = {p: snapshot.blob_sha(p) for p in [*paths, VLLM_REGISTRY_PATH]}
        vllm = vllm_tables(snapshot.read_text(VLLM_REGISTRY_PATH), files, blobs)
        commit_date = snapshot.commit_date
    return render_files(pin, ours, vllm_pin.commit, commit_date, vllm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m apron.extractors.transformers", description=__doc__
    )
    parser.add_argument("--root", type=Path, help="the project checkout (default: found upward)")
    parser.add_argument(
        "--source",
        type=Path,
        help="the pinned sdist (.tar.gz) your pip fetched; kept in the cache for later runs",
    )
    parser.add_argument("--vllm-source", help="vLLM source: URL or mirror path (default: its pin)")
    parser.add_argument(
        "--check", action="store_true", help="compare with generated/, write nothing"
    )
    args = parser.parse_args(argv)
    try:
        paths = find_project(args.root)
        files = render_project(paths.root, args.source, args.vllm_source)
        target = paths.generated / FOLDER
        if args.check:
            differ = sorted(
                name
                for name, text in files.items()
                if not (target / name).is_file() or (target / name).read_text("utf-8") != text
            )
            if target.is_dir():
                differ += sorted(
                    f"{p.name} (not produced by the tool)"
                    for p in target.iterdir()
                    if p.is_file() and p.name not in files
                )
            for name in differ:
                print(f"generated/{FOLDER}/{name} differs")
            return 1 if differ else 0
        with project_lock(paths.root):
            write_changes_atomically({target: files}, journal=paths.root / JOURNAL_NAME)
        print(f"wrote generated/{FOLDER}/ ({len(files)} files)")
        return 0
    except ExtractionError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code


if __name__ == "__main__":
    sys.exit(main())
