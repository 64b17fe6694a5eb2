"""Model ids (`ORG/NAME[@REV]`) and cache folders read from the local Hugging Face cache.

The cache is found as huggingface_hub finds it, read when apron is called (not when it is
imported): HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else
~/.cache/huggingface/hub. The file is looked up with huggingface_hub's `try_to_load_from_cache`,
which follows refs/<branch> to snapshots/<commit>/. apron reads the cache only: it never goes to
the Hub, so HF_HUB_OFFLINE=1 changes nothing, and it never reads weights beyond safetensors
headers. The snapshot directory it resolves to is the model directory: the safetensors index
and hf_quant_config.json are read from there when the cache holds them."""

from __future__ import annotations

import os
import re
from pathlib import Path

from apron.errors import ApronInputError

CONFIG_NAME = "config.json"
DEFAULT_REVISION = "main"
# ORG/NAME, optionally @REV (a branch, a tag or a commit; refs/pr/1 has slashes)
MODEL_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?")
REPO_FOLDER = re.compile(r"models--(?P<org>[^-][\w.-]*?)--(?P<name>.+)")


def cache_dir() -> Path:
    """The hub cache as huggingface_hub.constants computes it, from the environment now."""
    hub_cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if hub_cache:
        return Path(hub_cache).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg).expanduser() / "huggingface" / "hub"


def is_model_id(text: str) -> bool:
    return MODEL_ID.fullmatch(text) is not None


def resolve(source: str | Path) -> Path:
    """The path apron reads for `source`: itself when it exists (a cache repo folder
    models--ORG--NAME becomes its snapshot at refs/main), else the cache snapshot of the model
    id ORG/NAME[@REV]; a path that is neither is returned as given (load_config says so)."""
    path = Path(source)
    if path.is_dir() and REPO_FOLDER.fullmatch(path.name) and (path / "snapshots").is_dir():
        return _repo_folder_snapshot(path)
    if path.exists():
        return path
    found = MODEL_ID.fullmatch(str(source))
    if found is None:
        return path
    return _cached_snapshot(found.group("repo"), found.group("revision") or DEFAULT_REVISION)


def _repo_folder_snapshot(folder: Path) -> Path:
    ref = folder / "refs" / DEFAULT_REVISION
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8", errors="replace").strip()
        snapshot = folder / "snapshots" / commit
        if snapshot.is_dir():
            return snapshot
    snapshots = sorted(p for p in (folder / "snapshots").iterdir() if p.is_dir())
    if len(snapshots) == 1:
        return snapshots[0]
    names = ", ".join(p.name for p in snapshots) or "none"
    raise ApronInputError(
        f"{folder} is a Hugging Face cache folder without refs/{DEFAULT_REVISION} and with "
        f"{len(snapshots)} snapshots ({names}); give one snapshots/<commit> directory"
    )


def _cached_snapshot(repo_id: str, revision: str) -> Path:
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.utils import HFValidationError

    cache = cache_dir()
    try:
        found = try_to_load_from_cache(
            repo_id, CONFIG_NAME, cache_dir=cache, revision=revision, repo_type="model"
        )
    except HFValidationError as err:
        raise ApronInputError(
            f"{repo_id}@{revision} does not exist as a path and is not a valid Hugging Face "
            f"model id ({err}); give a config.json, a directory holding one, or --sample <name>"
        ) from None
    if isinstance(found, str):
        return Path(found).parent
    at = f"at revision {revision}" if revision != DEFAULT_REVISION else "at main"
    raise ApronInputError(
        f"{repo_id} does not exist as a path, and the Hugging Face cache {cache} holds no "
        f"{CONFIG_NAME} for it {at} (the cache comes from HF_HUB_CACHE, else HF_HOME/hub); "
        f"apron reads only the cache: fetch the metadata first with `hf download {repo_id} "
        f"{CONFIG_NAME} model.safetensors.index.json` (no weights), or give a config.json or "
        "a directory holding one"
    )
