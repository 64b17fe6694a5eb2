"""Model ids (`ORG/NAME[@REV]`) and cache folders read from the local Hugging Face cache, or from
the Hub when the cache does not hold them.

The cache is found as huggingface_hub finds it, read when apron is called (not when it is
imported): HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else
~/.cache/huggingface/hub. The file is looked up with huggingface_hub's `try_to_load_from_cache`,
which follows refs/<branch> to snapshots/<commit>/. The snapshot directory it resolves to is the
model directory: the safetensors index and hf_quant_config.json are read from there when the
cache holds them.

Not in the cache and HF_HUB_OFFLINE not set, the model's metadata is read from the Hub with
huggingface_hub (HF_TOKEN for a gated or private model): config.json, the safetensors index and
hf_quant_config.json with `hf_hub_download` into the cache (small JSON files), and, when there
is no index, the safetensors headers with `HfApi.get_safetensors_metadata` (range requests for
the headers only). Weights are never downloaded."""

from __future__ import annotations

import os
import re
from pathlib import Path

from apron.errors import ApronInputError
from apron.input_files import present, read_input_text
from apron.terminal import shown

CONFIG_NAME = "config.json"
HUB_METADATA = ("model.safetensors.index.json", "hf_quant_config.json")  # read when present
TRUE_VALUES = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's reading of HF_HUB_OFFLINE
# snapshot directory -> (repo id, revision) of the models whose metadata this process read from
# the Hub: only those get their safetensors headers by range request (hub_safetensors_headers)
_FROM_HUB: dict[Path, tuple[str, str]] = {}
DEFAULT_REVISION = "main"
# ORG/NAME, optionally @REV (a branch, a tag or a commit; refs/pr/1 has slashes)
MODEL_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?")
REPO_FOLDER = re.compile(r"models--(?P<org>[^-][\w.-]*?)--(?P<name>.+)")
MAX_REF_BYTES = 1024  # a ref holds one commit hash (40 hex digits)
REF = "a Hugging Face cache ref (refs/<branch>: one commit hash)"


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


# https://huggingface.co/ORG/NAME, optionally /tree/REV, /blob/REV/FILE or /resolve/REV/FILE
MODEL_URL = re.compile(
    r"https?://(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)"
    r"(?:/(?:tree|blob|resolve)/(?P<revision>[\w.-]+)(?:/[^?#]*)?)?/?(?:[?#].*)?"
)


def model_reference(text: str) -> tuple[str, str | None] | None:
    """(repo id, revision or None) of a model id ORG/NAME[@REV] or a Hub model URL; None for
    anything else."""
    found = MODEL_URL.fullmatch(text) or MODEL_ID.fullmatch(text)
    if found is None:
        return None
    return found.group("repo"), found.group("revision")


def resolve(source: str | Path, revision: str | None = None) -> Path:
    """The path apron reads for `source`: itself when it exists (a cache repo folder
    models--ORG--NAME becomes its snapshot at refs/main), else the cache snapshot of the model
    id ORG/NAME[@REV] or Hub URL at `revision` (--revision; it must agree with one the id or URL
    names); a path that is neither is returned as given (load_config says so)."""
    path = Path(source)
    if path.is_dir() and REPO_FOLDER.fullmatch(path.name) and (path / "snapshots").is_dir():
        return _repo_folder_snapshot(path)
    if path.exists():
        return path
    found = model_reference(str(source))
    if found is None:
        if revision is not None:
            raise ApronInputError(
                f"--revision {revision} goes with a Hub model id or URL, and {source} is neither"
            )
        return path
    repo, named = found
    if revision is not None and named is not None and named != revision:
        raise ApronInputError(
            f"{shown(source)} names revision {shown(named)}, --revision {shown(revision)}; give one"
        )
    revision = revision or named or DEFAULT_REVISION
    if ".." in revision.split("/") or revision.startswith("/"):
        raise ApronInputError(
            f"{shown(source)}: revision {shown(repr(revision))} climbs out of the cache's refs/ "
            "(a branch, a tag or a commit has no '..' part)"
        )
    return _cached_snapshot(repo, revision)


def read_ref(folder: Path, revision: str) -> str | None:
    """The commit `folder`/refs/`revision` names, read through apron.input_files (a regular
    file of at most MAX_REF_BYTES), or None when there is no such ref."""
    ref = folder / "refs" / revision
    if not present(ref):
        return None
    return read_input_text(ref, MAX_REF_BYTES, REF).strip()


def _snapshot_named(folder: Path, commit: str) -> Path | None:
    """snapshots/<commit> when `commit` is the name of an entry there; a ref that names a path
    (../../elsewhere) is never followed out of snapshots/, as huggingface_hub's
    try_to_load_from_cache takes only a name listed in snapshots/."""
    snapshots = folder / "snapshots"
    if commit not in os.listdir(snapshots):
        return None
    snapshot = snapshots / commit
    return snapshot if snapshot.is_dir() else None


def _repo_folder_snapshot(folder: Path) -> Path:
    commit = read_ref(folder, DEFAULT_REVISION)
    if commit is not None:
        snapshot = _snapshot_named(folder, commit)
        if snapshot is not None:
            return snapshot
        raise ApronInputError(
            f"{shown(folder)}: refs/{DEFAULT_REVISION} names {shown(repr(commit))}, which is not "
            "a snapshot in its snapshots/ folder (huggingface_hub's cache lookup takes only a "
            "name listed there); give one snapshots/<commit> directory"
        )
    snapshots = sorted(p for p in (folder / "snapshots").iterdir() if p.is_dir())
    if len(snapshots) == 1:
        return snapshots[0]
    names = ", ".join(shown(p.name) for p in snapshots[:10]) or "none"
    more = f" and {len(snapshots) - 10} more" if len(snapshots) > 10 else ""
    raise ApronInputError(
        f"{shown(folder)} is a Hugging Face cache folder without refs/{DEFAULT_REVISION} and with "
        f"{len(snapshots)} snapshots ({names}{more}); give one snapshots/<commit> directory"
    )


def _cached_snapshot(repo_id: str, revision: str) -> Path:
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.utils import HFValidationError

    cache = cache_dir()
    folder = cache / f"models--{repo_id.replace('/', '--')}"
    if folder.is_dir():  # huggingface_hub reads the ref whole: read it first, within the cap
        read_ref(folder, revision)
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
    if not hub_offline():
        return _from_hub(repo_id, revision)
    at = f"at revision {revision}" if revision != DEFAULT_REVISION else "at main"
    raise ApronInputError(
        f"{repo_id} does not exist as a path, and the Hugging Face cache {cache} holds no "
        f"{CONFIG_NAME} for it {at} (the cache comes from HF_HUB_CACHE, else HF_HOME/hub); "
        f"with HF_HUB_OFFLINE set apron reads only the cache: fetch the metadata first with "
        f"`hf download {repo_id} {CONFIG_NAME} model.safetensors.index.json` (no weights), or "
        "give a config.json or a directory holding one"
    )


def hub_offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it, from the environment now."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in TRUE_VALUES


def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or None  # None: huggingface_hub's own login, if any


def _hub_error(repo_id: str, revision: str, err: Exception) -> ApronInputError:
    from huggingface_hub.utils import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(err, GatedRepoError):
        why = "is gated: accept its terms on the Hub and set HF_TOKEN"
    elif isinstance(err, RepositoryNotFoundError):
        why = "is not on the Hub (or is private: set HF_TOKEN)"
    elif isinstance(err, RevisionNotFoundError):
        why = f"has no revision {revision!r} on the Hub"
    else:
        why = (
            f"could not be read from the Hub ({type(err).__name__}: {err}); offline, set "
            "HF_HUB_OFFLINE=1 and fetch the metadata into the cache first"
        )
    return ApronInputError(
        f"{repo_id} does not exist as a path, is not in the Hugging Face cache {cache_dir()}, "
        f"and {why}"
    )


def _network_error(repo_id: str, revision: str, err: Exception) -> ApronInputError:
    """The Hub could not be reached (huggingface_hub's LocalEntryNotFoundError: no connection,
    and the file is not in the cache)."""
    return ApronInputError(
        f"{repo_id}@{revision}: the Hugging Face Hub could not be reached (a network failure: "
        f"{type(err).__name__}), and the cache {cache_dir()} does not hold its {CONFIG_NAME}; "
        "connect and retry, or work offline: set HF_HUB_OFFLINE=1 (apron then reads only the "
        f"cache, without waiting for the network) after `hf download {repo_id} {CONFIG_NAME} "
        "model.safetensors.index.json` on a machine that is online, or give a config.json"
    )


def _from_hub(repo_id: str, revision: str) -> Path:
    """The cache snapshot after config.json and the metadata files beside it are downloaded
    from the Hub (JSON only, never weights)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import EntryNotFoundError, LocalEntryNotFoundError

    cache = cache_dir()
    try:
        config = hf_hub_download(
            repo_id, CONFIG_NAME, revision=revision, cache_dir=cache, token=_token()
        )
        for name in HUB_METADATA:
            try:
                hf_hub_download(repo_id, name, revision=revision, cache_dir=cache, token=_token())
            except LocalEntryNotFoundError:
                raise
            except EntryNotFoundError:  # the Hub said the file is not there
                pass
    except LocalEntryNotFoundError as err:  # no answer from the Hub: not "the file is missing"
        raise _network_error(repo_id, revision, err) from None
    except EntryNotFoundError:  # the Hub answered 404 for config.json
        raise ApronInputError(
            f"{repo_id}@{revision} is on the Hub but has no {CONFIG_NAME}; apron plans from a "
            "Hugging Face config.json"
        ) from None
    except Exception as err:  # network, HTTP and auth errors all end as one message (exit 2)
        raise _hub_error(repo_id, revision, err) from err
    snapshot = Path(config).parent
    _FROM_HUB[snapshot] = (repo_id, revision)
    return snapshot


def hub_safetensors_headers(directory: Path) -> dict[str, dict] | None:
    """{file name: its safetensors header as JSON} read by range request from the Hub, for a
    model whose metadata this process read from the Hub (else None); ApronInputError when the
    Hub cannot give them."""
    where = _FROM_HUB.get(Path(directory))
    if where is None:
        return None
    from huggingface_hub import HfApi
    from huggingface_hub.utils import NotASafetensorsRepoError

    repo_id, revision = where
    try:
        found = HfApi(token=_token()).get_safetensors_metadata(repo_id, revision=revision)
    except NotASafetensorsRepoError:
        return None
    except Exception as err:  # network, HTTP and parse errors all end as one message (exit 2)
        raise _hub_error(repo_id, revision, err) from err
    return {
        name: {
            tensor: {
                "dtype": info.dtype,
                "shape": list(info.shape),
                "data_offsets": list(info.data_offsets),
            }
            for tensor, info in file.tensors.items()
        }
        for name, file in sorted(found.files_metadata.items())
    }
