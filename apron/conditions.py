"""The config as a serving engine's conditions read it: the environment apron/expressions.py
evaluates an extracted condition in (vLLM's `hasattr(cfg, k)` is "has", `getattr(cfg, k, d)` is
"hpget"). Engine meaning lives here, in the environment; the evaluation is apron/expressions.py's.

`holds` reads one config (the text config, derived values too: vLLM's rules); `object_holds`
reads the config objects SGLang's conditions name, each key spelled "<object>.<field>" as the
builder (parsing.expressions.config_condition) writes it: "hf_config.index_topk" is the config.json
as published, "hf_text_config.use_mla" its text config (the config itself when it has none);
both as published, no derived value (SGLang's getattr reads the loaded object)."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.expressions import Converter, Unknown, Unread, evaluate
from apron.record import Record


class Evaluation(Record):
    """The truth of a condition (None when it cannot be evaluated) and notes on how it was read."""

    value: bool | None
    notes: tuple[str, ...]
    problem: str


class _ConfigReads:
    """The config as the condition's `hparams`: fields of the text config (dotted paths reach
    into dicts), or the derived value the engine's config class supplies; `model_type` is the
    top-level one (vLLM keys its model_type tests on hf_config.model_type). A key read with a
    false default and absent from the config is noted."""

    __slots__ = ("model", "notes")

    def __init__(self, model: ModelConfig) -> None:
        self.model = model
        self.notes: list[str] = []

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.model.present(key)

    def __getitem__(self, key: str) -> Any:
        read = self.model.read(key)
        if read is None:
            raise KeyError(key)
        return read.value

    def get(self, key: str, default: Any = None) -> Any:
        if key == "model_type":
            value = self.model.model_type
            return default if value is None else value
        read = self.model.read(key)
        if read is None:
            if default is False:  # getattr(cfg, flag, False)
                self.notes.append(f"{key} absent from the config: read as false")
            return default
        return read.value


class _ConfigObjects:
    """SGLang's config objects as one `hparams`: a key "<object>.<field>" reads `field` of
    hf_config (model.raw) or hf_text_config (model.text); any other object is Unknown."""

    __slots__ = ("model",)

    def __init__(self, model: ModelConfig) -> None:
        self.model = model

    def _split(self, key: object) -> tuple[Any, str]:
        root, _, name = str(key).partition(".")
        objects = {"hf_config": self.model.raw, "hf_text_config": self.model.text}
        if root not in objects or not name:
            raise Unknown(f"{key}: not a field of hf_config or hf_text_config")
        return objects[root], name

    def __contains__(self, key: object) -> bool:
        source, name = self._split(key)
        return name in source

    def __getitem__(self, key: str) -> Any:
        source, name = self._split(key)
        return source[name]

    def get(self, key: str, default: Any = None) -> Any:
        source, name = self._split(key)
        return source[name] if name in source else default


def _no_attribute(name: str) -> Unread:
    return Unread(f"self.{name}: a condition on the config reads no attribute")


def holds(model: ModelConfig, condition: Any) -> Evaluation:
    """Truth of an extracted condition for this config; the empty condition () holds."""
    if condition == ():
        return Evaluation(True, (), "")
    reads = _ConfigReads(model)
    try:
        value = evaluate(condition, {}, None, Converter(reads, _no_attribute))  # type: ignore[arg-type]
    except Unknown as err:
        return Evaluation(None, tuple(reads.notes), f"condition not evaluated: {err}")
    return Evaluation(bool(value), tuple(reads.notes), "")


def object_holds(model: ModelConfig, condition: Any) -> Evaluation:
    """Truth of a condition on SGLang's config objects (keys "<object>.<field>") for this
    config; the empty condition () holds."""
    if condition == ():
        return Evaluation(True, (), "")
    try:
        value = evaluate(condition, {}, None, Converter(_ConfigObjects(model), _no_attribute))  # type: ignore[arg-type]
    except Unknown as err:
        return Evaluation(None, (), f"condition not evaluated: {err}")
    return Evaluation(bool(value), (), "")
