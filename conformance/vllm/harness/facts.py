"""What vLLM reports at run time of its static facts: the registered architectures (with module,
class and task group) and each architecture's _ModelInfo flags, plus the interface flags
generated/vllm also records (LoRA, EAGLE, EAGLE-3, SupportsQuant)."""

from __future__ import annotations

from typing import Any

INTERFACE_FLAGS = ("supports_lora", "supports_eagle", "supports_eagle3", "supports_quant")


def _interface_flags(model_cls) -> dict[str, bool]:
    from vllm.model_executor.models import interfaces

    return {
        "supports_lora": bool(interfaces.supports_lora(model_cls)),
        "supports_eagle": bool(interfaces.supports_eagle(model_cls)),
        "supports_eagle3": bool(interfaces.supports_eagle3(model_cls)),
        "supports_quant": issubclass(model_cls, interfaces.SupportsQuant),
    }


def registry_facts() -> dict[str, Any]:
    """{"registry": {arch: {module, class_name}}, "flags": {arch: {flag: value}},
    "not_imported": {arch: why}}: every architecture ModelRegistry lists."""
    from vllm.model_executor.models.registry import ModelRegistry, _ModelInfo

    registry: dict[str, dict[str, str]] = {}
    flags: dict[str, dict[str, Any]] = {}
    not_imported: dict[str, str] = {}
    for arch in sorted(ModelRegistry.get_supported_archs()):
        entry = ModelRegistry.models[arch]
        registry[arch] = {
            "module": getattr(entry, "module_name", ""),
            "class_name": getattr(entry, "class_name", ""),
        }
        try:
            model_cls = entry.load_model_cls()
            info = _ModelInfo.from_model_cls(model_cls)
        except Exception as error:  # a model module that does not import on this host
            not_imported[arch] = " ".join(f"{type(error).__name__}: {error}".split())[:300]
            continue
        values = {k: v for k, v in vars(info).items() if k != "architecture"}
        values.update(_interface_flags(model_cls))
        flags[arch] = {
            k: (v if isinstance(v, bool | int | str) else str(v)) for k, v in values.items()
        }
    return {"registry": registry, "flags": flags, "not_imported": not_imported}
