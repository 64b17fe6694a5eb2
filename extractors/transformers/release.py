"""transformers' pinned release: `pins/transformers.toml` (package, version, sha256 of the sdist;
no index address), the sdist the user's pip fetched from the user's index, given once with
--source and kept in the user cache directory, checked against the sha256, and the configuration
modules read out of the archive (never unpacked, never imported, never built)."""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from apron.extractors.errors import PinError, SourceError
from apron.extractors.git.cache import CACHE_ENV, usable_cache_dir
from apron.extractors.pins import read_pin_toml
from apron.extractors.snapshot import decode_source, git_blob_sha

PIN_NAME = "transformers.toml"
# the configuration modules, relative to the sdist's top folder
CONFIG_GLOB = "src/transformers/models/*/configuration_*.py"
MAX_SDIST_BYTES = 64 * 1024 * 1024  # the 5.5.3 sdist is 8 MB
SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
RELEASE = re.compile(r"^[0-9][0-9A-Za-z.+-]*\Z")
PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
PIN_FIELDS = {"package", "version", "sha256"}


@dataclass(frozen=True)
class ReleasePin:
    """A release sdist named the way pip asks for it; no index address (pip's own config picks
    the index)."""

    package: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


def load_release_pin(pins_dir: Path) -> ReleasePin:
    path = pins_dir / PIN_NAME
    data = read_pin_toml(path, "transformers")
    problems = []
    package, version, sha = data.get("package"), data.get("version"), data.get("sha256")
    if set(data) != PIN_FIELDS:
        problems.append("fields must be exactly package, version, sha256")
    if not isinstance(package, str) or not PACKAGE.match(package):
        problems.append(f"package {package!r} is not a package name")
    if not isinstance(version, str) or not RELEASE.match(version):
        problems.append(f"version {version!r} is not a version")
    if not isinstance(sha, str) or not SHA256.match(sha):
        problems.append(f"sha256 {sha!r} must be 64 lowercase hex digits")
    if problems:
        raise PinError(
            f"pin file {path} is malformed: {'; '.join(problems)}", engine="transformers"
        )
    return ReleasePin(package=package, version=version, sha256=sha)  # type: ignore[arg-type]


def cache_path(pin: ReleasePin) -> Path:
    root = Path(os.environ.get(CACHE_ENV) or user_cache_dir("apron")) / "transformers"
    return root / f"{pin.sha256}.tar.gz"


def _checked(data: bytes, pin: ReleasePin, where: str) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise SourceError(
            f"{where} has sha256 {digest}, but pins/{PIN_NAME} names {pin.sha256} "
            f"({pin.requirement})",
            engine="transformers",
            source=where,
        )
    return data


def sdist_bytes(pin: ReleasePin, source: Path | None = None) -> bytes:
    """The pinned sdist: from `source` (a local .tar.gz, then kept in the cache), else the
    cache; always checked against the pin's sha256. apron downloads nothing and runs no
    installer: the user's pip fetches the file from the user's index."""
    cached = cache_path(pin)
    if source is not None:
        try:
            data = source.read_bytes()
        except OSError as err:
            raise SourceError(
                f"cannot read {source}: {err.strerror or err}", engine="transformers"
            ) from err
        _checked(data, pin, str(source))
        if not cached.is_file():
            usable_cache_dir(cached.parent)
            partial = cached.with_suffix(".part")
            partial.write_bytes(data)
            partial.replace(cached)
        return data
    if cached.is_file():
        return _checked(cached.read_bytes(), pin, str(cached))
    raise SourceError(
        f"the {pin.requirement} sdist is not in the cache ({cached}): fetch it from your index "
        f"with pip (`pip download --no-deps --no-binary :all: {pin.requirement}`) and give it "
        "with --source PATH",
        engine="transformers",
    )


def configuration_modules(data: bytes, where: str) -> dict[str, str]:
    """path (inside the package, `src/transformers/...`) -> text of every configuration module
    of the sdist, sorted by path. The archive's top folder is dropped."""
    found: dict[str, str] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive:
                if not member.isfile():
                    continue
                _, _, inner = member.name.partition("/")
                if not fnmatch.fnmatchcase(inner, CONFIG_GLOB) or inner.count("/") != 4:
                    continue
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                found[inner] = decode_source(inner, handle.read())
    except (tarfile.TarError, OSError, EOFError) as err:
        raise SourceError(
            f"{where} is not a readable .tar.gz: {err}", engine="transformers"
        ) from err
    if not found:
        raise SourceError(
            f"{where} holds no {CONFIG_GLOB}", engine="transformers", paths=[CONFIG_GLOB]
        )
    return dict(sorted(found.items()))


def blob_of(text: str) -> str:
    return git_blob_sha(text.encode("utf-8"))
