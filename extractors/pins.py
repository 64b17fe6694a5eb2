"""Pin files: `pins/<engine>.toml` names the upstream URL, the full commit and its date."""

from __future__ import annotations

import re
import tomllib
from datetime import date as calendar_date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from apron.errors import ApronInputError
from apron.extractors.errors import PinError, UsageError
from apron.input_files import present, read_input_text
from apron.terminal import shown

# \Z, not $: `$` also matches before a trailing newline, which would let "<sha>\n" through
FULL_SHA = re.compile(r"^[0-9a-f]{40}\Z")
ANY_SHA = re.compile(r"^[0-9a-f]{4,40}\Z")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}\Z")
MAX_PIN_BYTES = 65_536  # a pin is three short lines


def check_commit_argument(commit: str) -> str:
    """Reject a commit argument before git sees it: only 4-40 lowercase hex digits pass."""
    value = commit.strip().lower()
    if commit != commit.strip() or not ANY_SHA.match(value):
        raise UsageError(f"commit {commit!r} is not a hexadecimal SHA (4 to 40 hex digits)")
    return value


def check_source_url(url: str) -> str:
    """Only https://, file:// and local paths are sources; everything else is rejected."""
    if not url or url.startswith("-") or any(c.isspace() for c in url) or not url.isprintable():
        raise UsageError(f"source {url!r} is not a valid URL or path")
    if "://" in url:
        if not (url.startswith("https://") or url.startswith("file://")):
            scheme = url.split("://", 1)[0]
            raise UsageError(
                f"source {url!r} uses scheme '{scheme}'; only https://, file:// "
                "and local paths are allowed"
            )
        return url
    if re.match(r"^[\w.-]+@[\w.-]+:", url) or url.startswith("ext::"):
        raise UsageError(f"source {url!r} is not https://, file:// or a local path")
    return url


class Pin(BaseModel):
    """One engine's pin."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    commit: str
    date: str

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not (value.startswith("https://") or value.startswith("file://")):
            raise ValueError(f"url {value!r} must start with https:// or file://")
        if not value.isprintable() or any(c.isspace() for c in value):
            raise ValueError(f"url {value!r} contains whitespace or a control character")
        return value

    @field_validator("commit")
    @classmethod
    def _commit(cls, value: str) -> str:
        if not FULL_SHA.match(value):
            raise ValueError(f"commit {value!r} must be a full 40-hex-digit SHA")
        return value

    @field_validator("date")
    @classmethod
    def _date(cls, value: str) -> str:
        if not DATE.match(value):
            raise ValueError(f"date {value!r} must be YYYY-MM-DD")
        try:
            calendar_date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"date {value!r} is not a real calendar date") from None
        return value


def pin_path(pins_dir: Path, engine_id: str) -> Path:
    """The pin file of a known engine id; an id that would escape `pins/` is rejected."""
    if not re.fullmatch(r"[a-z0-9_]+", engine_id):
        raise PinError(f"engine id {engine_id!r} cannot name a pin file", engine=engine_id)
    path = (pins_dir / f"{engine_id}.toml").resolve()
    if path.parent != pins_dir.resolve():
        raise PinError(f"pin path {path} escapes {pins_dir}", engine=engine_id)
    return path


def read_pin_toml(path: Path, engine_id: str) -> dict:
    """The TOML table of a pin file, read through apron.input_files (a regular file of at most
    MAX_PIN_BYTES: a FIFO, a directory or a 3 GB file is refused before it is read); PinError
    naming the file otherwise."""
    if not present(path):
        raise PinError(f"no pin file {shown(path)}", engine=engine_id, paths=[str(path)])
    try:
        text = read_input_text(path, MAX_PIN_BYTES, "a pin file (url, commit, date)")
        return tomllib.loads(text)
    except ApronInputError as err:
        raise PinError(str(err), engine=engine_id, paths=[str(path)]) from err
    except tomllib.TOMLDecodeError as err:
        raise PinError(
            f"pin file {shown(path)} is not valid TOML: {shown(str(err))}", engine=engine_id
        ) from err


def load_pin(pins_dir: Path, engine_id: str) -> Pin:
    path = pin_path(pins_dir, engine_id)
    data = read_pin_toml(path, engine_id)
    try:
        return Pin.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'file'}: "
            + (
                "missing field"
                if e["type"] == "missing"
                else e["msg"].removeprefix("Value error, ")
            )
            for e in err.errors()
        )
        raise PinError(f"pin file {path} is malformed: {problems}", engine=engine_id) from None


def render_pin(pin: Pin) -> str:
    return f'url = "{pin.url}"\ncommit = "{pin.commit}"\ndate = "{pin.date}"\n'
