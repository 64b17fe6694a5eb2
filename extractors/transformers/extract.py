"""Configuration modules -> config-class tables: transformers' (every
`src/transformers/models/*/configuration_*.py` of the pinned sdist) and vLLM's own
(`vllm/transformers_utils/configs/*.py`, with the model_types `_CONFIG_REGISTRY` maps to them).
Pure: file texts in, tables out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import parse_python, string_value, top_level_assignments
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.transformers.config_classes import ConfigClass, read_module

VLLM_CONFIGS_DIR = "vllm/transformers_utils/configs"
VLLM_REGISTRY_PATH = "vllm/transformers_utils/config.py"
VLLM_REGISTRY = "_CONFIG_REGISTRY"
AUTO_PATH = "src/transformers/models/auto/configuration_auto.py"
AUTO_MAPPING = "CONFIG_MAPPING_NAMES"


@dataclass(frozen=True)
class ClassTables:
    classes: tuple[ConfigClass, ...]
    warnings: tuple[ExtractionWarning, ...]
    sources: tuple[tuple[str, str], ...]  # (path, git blob sha)
    registry: tuple[tuple[str, str], ...] = ()  # vLLM: (model_type, class name)


def read_classes(
    files: Mapping[str, str], blobs: Mapping[str, str], fact: str
) -> tuple[list[ConfigClass], list[ExtractionWarning]]:
    classes: list[ConfigClass] = []
    warnings: list[ExtractionWarning] = []
    for path in sorted(files):
        found, soft = read_module(files[path], path)
        classes += found
        warnings += soft
    by_type: dict[str, str] = {}
    for cls in classes:
        if cls.model_type is None:
            continue
        if cls.model_type in by_type and by_type[cls.model_type] != cls.class_name:
            warnings.append(
                warning(
                    "model_type_twice",
                    cls.model_type,
                    f"model_type {cls.model_type!r} is declared by {by_type[cls.model_type]} "
                    f"and {cls.class_name}; apron takes the class REGISTRY maps it to, else the first "
                    "by path",
                    cls.path,
                    cls.class_name,
                )
            )
        else:
            by_type[cls.model_type] = cls.class_name
    stamped = [w.model_copy(update={"fact": fact}) for w in warnings]
    return classes, stamped


def transformers_tables(files: Mapping[str, str], blobs: Mapping[str, str]) -> ClassTables:
    classes, warnings = read_classes(files, blobs, "transformers_config_classes")
    if not classes:
        raise AnchorError(
            "no configuration class in the configuration modules",
            engine="transformers",
            paths=sorted(files)[:3],
            anchor="class *Config",
        )
    registry = auto_mapping(files[AUTO_PATH]) if AUTO_PATH in files else None
    if registry is None:
        raise AnchorError(
            f"{AUTO_MAPPING} (a list of (model_type, class name) pairs) not found",
            engine="transformers",
            paths=[AUTO_PATH],
            anchor=AUTO_MAPPING,
        )
    return ClassTables(
        tuple(classes),
        tuple(warnings),
        tuple((p, blobs[p]) for p in sorted(files)),
        tuple(sorted(registry)),
    )


def auto_mapping(text: str, path: str = AUTO_PATH) -> list[tuple[str, str]] | None:
    """(model_type, class name) of `CONFIG_MAPPING_NAMES = OrderedDict([("a", "AConfig"), ...])`:
    the class AutoConfig builds for each model_type."""
    root = parse_python(text, path)
    for name, value in top_level_assignments(root):
        if name != AUTO_MAPPING or value is None or value.type != "call":
            continue
        arguments = value.child_by_field_name("arguments").named_children
        if len(arguments) != 1 or arguments[0].type != "list":
            return None
        pairs = []
        for item in arguments[0].named_children:
            parts = item.named_children if item.type == "tuple" else ()
            strings = [string_value(p) for p in parts]
            if len(strings) != 2 or None in strings:
                return None
            pairs.append((strings[0], strings[1]))
        return pairs or None
    return None


def vllm_registry(text: str, path: str = VLLM_REGISTRY_PATH) -> list[tuple[str, str]]:
    """(model_type, class name) of `_CONFIG_REGISTRY = LazyConfigDict(a="AConfig", **{...})`."""
    root = parse_python(text, path)
    for name, value in top_level_assignments(root):
        if name != VLLM_REGISTRY or value is None or value.type != "call":
            continue
        pairs: list[tuple[str, str]] = []
        for argument in value.child_by_field_name("arguments").named_children:
            if argument.type == "keyword_argument":
                cls = string_value(argument.child_by_field_name("value"))
                key = argument.child_by_field_name("name")
                if cls is not None and key is not None:
                    pairs.append((key.text.decode(), cls))
            elif argument.type == "dictionary_splat" and argument.named_children:
                inner = argument.named_children[0]
                for pair in inner.named_children if inner.type == "dictionary" else ():
                    key_text = string_value(pair.child_by_field_name("key"))
                    cls = string_value(pair.child_by_field_name("value"))
                    if key_text is not None and cls is not None:
                        pairs.append((key_text, cls))
        if pairs:
            return sorted(pairs)
    raise AnchorError(
        f'{VLLM_REGISTRY} (a call with model_type="ClassName" arguments) not found',
        engine="vllm",
        paths=[path],
        anchor=VLLM_REGISTRY,
    )


def vllm_tables(
    registry_text: str, files: Mapping[str, str], blobs: Mapping[str, str]
) -> ClassTables:
    registry = vllm_registry(registry_text)
    classes, warnings = read_classes(files, blobs, "vllm_config_classes")
    sources = tuple((p, blobs[p]) for p in sorted({*files, VLLM_REGISTRY_PATH}))
    return ClassTables(tuple(classes), tuple(warnings), sources, tuple(registry))
