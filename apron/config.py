"""Read a Hugging Face config.json (file, directory, dict or shipped sample) and expose its fields.

Geometry comes from the text sub-config (`text_config`, `language_config`) when there is one, as
vLLM's `hf_text_config` does; `architectures` and the top-level `model_type` come from the top.
Nothing here invents a value: an absent field reads as absent."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apron.errors import ApronInputError
from apron.input_files import present, read_input
from apron.json_files import parse_json, read_json_object
from apron.record import Record
from apron.terminal import shown

if TYPE_CHECKING:
    from apron.constraints import ConstraintSet

TEXT_CONFIG_KEYS = ("text_config", "language_config")
GGUF_MAGIC = b"GGUF"
SAMPLES_DIR = Path(__file__).resolve().parent / "samples"

# transformers' `PretrainedConfig.attribute_map` spellings (attribute read -> config.json key)
# come from the extracted configuration classes (apron.normalize.attribute_map,
# generated/transformers/).


class FieldRead(Record):
    """One config field as read: the canonical name, the key actually present, its value."""

    name: str
    key: str
    value: Any


def _dig(mapping: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    node: Any = mapping
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ModelConfig:
    """A normalized view of one config.json."""

    __slots__ = (
        "raw",
        "text",
        "text_key",
        "source",
        "constraints",
        "_aliases",
        "_derived",
        "_reading",
    )

    def __init__(
        self, raw: Mapping[str, Any], source: str, constraints: ConstraintSet | None = None
    ) -> None:
        """`constraints`: the rules the config is read with (its configuration classes) and that
        every figure computed from it evaluates; default: the generated/ apron was installed
        with."""
        self.raw = raw
        self.source = source
        self.text_key: str | None = None
        self.text: Mapping[str, Any] = raw
        for key in TEXT_CONFIG_KEYS:
            sub = raw.get(key)
            if isinstance(sub, Mapping):
                self.text_key, self.text = key, sub
                break
        if constraints is None:
            from apron.constraints import load_constraints

            constraints = load_constraints()
        self.constraints = constraints
        classes = constraints.config_classes()
        self._aliases = (
            classes.attribute_map(
                classes.text_class(self.text_model_type, self.text_key, self.model_type)
            )
            if classes is not None
            else {}
        )
        self._derived: dict[str, Any] | None = None
        self._reading = ""

    # -- identity ---------------------------------------------------------------------------
    @property
    def architectures(self) -> tuple[str, ...]:
        archs = self.raw.get("architectures")
        if isinstance(archs, list | tuple):
            return tuple(a for a in archs if isinstance(a, str))
        return ()

    @property
    def architecture(self) -> str | None:
        return self.architectures[0] if self.architectures else None

    @property
    def model_type(self) -> str | None:
        value = self.raw.get("model_type")
        return value if isinstance(value, str) else None

    @property
    def text_model_type(self) -> str | None:
        """model_type of the text config (the top-level one when there is no sub-config)."""
        value = self.text.get("model_type")
        return value if isinstance(value, str) else None

    # -- fields -----------------------------------------------------------------------------
    def _published(self, name: str) -> FieldRead | None:
        found, value = _dig(self.text, name)
        if found:
            return FieldRead(name, name, value)
        for spelling in self._aliases.get(name, ()):
            found, value = _dig(self.text, spelling)
            if found:
                return FieldRead(name, spelling, value)
        return None

    def published(self, name: str) -> FieldRead | None:
        """The field as config.json states it (its text config, its spellings), never derived."""
        return self._published(name)

    def _published_value(self, name: str) -> Any:
        read = self._published(name)
        return None if read is None else read.value

    @property
    def derived(self) -> dict[str, Any]:
        """Fields the engine sees that config.json lacks (apron.normalize), by name -> Derived."""
        if self._derived is None:
            classes = self.constraints.config_classes()
            mt = self.text_model_type or self.model_type
            if classes is None:
                self._derived, self._reading = (
                    {},
                    (
                        "config read as published: the constraint set has no configuration classes "
                        "(generated/transformers/), so no class defaults are filled in"
                    ),
                )
                return self._derived
            self._derived, self._reading = classes.derive(
                mt,
                self._published_value,
                self.text,
                text_key=self.text_key,
                top_model_type=self.model_type,
            )
        return self._derived

    @property
    def reading(self) -> str:
        """How the config was read (static class reading or as published), for the answer."""
        _ = self.derived
        return self._reading

    def read(self, name: str) -> FieldRead | None:
        """The field from the text config (dotted paths reach into dicts), else the derived value
        the engine's config class supplies, or None when absent.

        A key that is present with a null value reads as FieldRead(value=None), except where a
        derived rule replaces the null (a null num_key_value_heads stays null)."""
        published = self._published(name)
        if published is not None and (published.value is not None or name not in self.derived):
            return published
        derived = self.derived.get(name)
        if derived is not None:
            return FieldRead(name, f"{name} (derived: {derived.source})", derived.value)
        return published

    def bound(self, constraints: ConstraintSet) -> ModelConfig:
        """This config read with another constraint set (itself when it already is)."""
        if constraints is self.constraints:
            return self
        return ModelConfig(self.raw, self.source, constraints)

    def present(self, name: str) -> bool:
        return self.read(name) is not None

    def get(self, name: str) -> Any:
        """The value, or None when absent or null."""
        read = self.read(name)
        return None if read is None else read.value

    def integer(self, name: str) -> int | None:
        """The value when it is an integer (bools excluded), else None."""
        value = self.get(name)
        return value if is_int(value) else None

    def top(self, name: str) -> Any:
        """A top-level field (not the text sub-config)."""
        return self.raw.get(name)

    def key_of(self, name: str) -> str:
        """How `name` is spelled in this config, for messages ("num_hidden_layers" or "n_layers")."""
        read = self.read(name)
        return read.key if read is not None else name

    def model_dtype(self) -> str | None:
        for key in ("torch_dtype", "dtype"):
            value = self.text.get(key)
            if isinstance(value, str):
                return value
            value = self.raw.get(key)
            if isinstance(value, str):
                return value
        return None


# -- loading ------------------------------------------------------------------------------------


def _gguf_message(what: str) -> str:
    return (
        f"{what}, not a Hugging Face config.json: give the .gguf file itself (`apron plan "
        "FILE.gguf` or `apron gguf FILE.gguf` gives llama.cpp's figures from its header)"
    )


def _adapter_message(path: Path, adapter: Mapping[str, Any] | None) -> str:
    base = adapter.get("base_model_name_or_path") if isinstance(adapter, Mapping) else None
    hint = f" (its base model is {shown(repr(base))})" if isinstance(base, str) and base else ""
    return (
        f"{shown(path)} holds a LoRA/PEFT adapter (adapter_config.json), not a model config. "
        f"Give apron the base model's config.json instead{hint}."
    )


MAX_CONFIG_BYTES = 16_000_000  # the largest shipped Hugging Face config.json is under 1 MB


def _parse_json_file(path: Path) -> Any:
    data = read_input(path, MAX_CONFIG_BYTES, "a Hugging Face config.json")
    if data[:4] == GGUF_MAGIC:
        raise ApronInputError(_gguf_message(f"{shown(path)} is a GGUF file"))
    try:
        return parse_json(data, str(path))
    except UnicodeDecodeError as err:
        raise ApronInputError(
            f"{shown(path)} is not a JSON file (not UTF-8 text); expected a Hugging Face config.json"
        ) from err
    except json.JSONDecodeError as err:
        raise ApronInputError(
            f"{shown(path)} is not valid JSON ({err.msg} at line {err.lineno}, column "
            f"{err.colno}); expected a Hugging Face config.json"
        ) from err
    except ValueError as err:
        raise ApronInputError(f"{shown(path)} is not valid JSON ({shown(str(err))})") from err


def _is_adapter(data: Mapping[str, Any]) -> bool:
    return ("peft_type" in data or "base_model_name_or_path" in data) and not (
        "architectures" in data or "model_type" in data
    )


def _from_path(path: Path, constraints: ConstraintSet | None = None) -> ModelConfig:
    if path.is_dir():
        config = path / "config.json"
        if not present(config):  # a FIFO or device there is refused by read_input
            adapter = path / "adapter_config.json"
            if present(adapter):
                try:  # read only for the message's hint, with config.json's limits
                    content = read_json_object(adapter, MAX_CONFIG_BYTES, "an adapter_config.json")
                except ApronInputError:
                    content = None
                raise ApronInputError(_adapter_message(path, content))
            if any(path.glob("*.gguf")):
                raise ApronInputError(
                    _gguf_message(f"{shown(path)} holds GGUF files and no config.json")
                )
            raise ApronInputError(
                f"{shown(path)} is a directory without a config.json; give the model's "
                "config.json or the directory that holds it"
            )
        path = config
    elif not path.exists():
        raise ApronInputError(
            f"{shown(path)} does not exist; give a config.json, a directory holding one, "
            "or --sample <name>"
        )
    data = _parse_json_file(path)
    if not isinstance(data, dict):
        kind = type(data).__name__ if data is not None else "null"
        raise ApronInputError(
            f"{shown(path)} is JSON but not an object (found {kind}); a config.json is one JSON object"
        )
    if _is_adapter(data):
        raise ApronInputError(_adapter_message(path, data))
    return ModelConfig(data, str(path), constraints)


def load_config(
    source: str | Path | Mapping[str, Any],
    name: str | None = None,
    constraints: ConstraintSet | None = None,
    revision: str | None = None,
) -> ModelConfig:
    """A ModelConfig from a path (file or directory), a model id ORG/NAME[@REV] or Hub URL (at
    `revision`) or a cache folder models--ORG--NAME in the local Hugging Face cache
    (apron.hf_cache), or a parsed dict."""
    if isinstance(source, Mapping):
        if _is_adapter(source):
            raise ApronInputError(_adapter_message(Path(name or "<dict>"), source))
        return ModelConfig(source, name or "<dict>", constraints)
    from apron import hf_cache

    try:
        return _from_path(hf_cache.resolve(source, revision), constraints)
    except OSError as err:  # an unreadable directory: Path.is_dir/is_file raise PermissionError
        raise ApronInputError(
            f"cannot read {shown(str(err.filename or source))}: {err.strerror or err}"
        ) from err


def sample_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in SAMPLES_DIR.glob("*.json") if p.stem != "weights"))


def load_sample(name: str, constraints: ConstraintSet | None = None) -> ModelConfig:
    path = SAMPLES_DIR / f"{name}.json"
    if not path.is_file():
        raise ApronInputError(
            f"no sample named {shown(repr(name))}; samples: {', '.join(sample_names())}"
        )
    config = _from_path(path, constraints)
    return ModelConfig(config.raw, f"sample:{name}", config.constraints)
