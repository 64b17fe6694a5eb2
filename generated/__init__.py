"""Generated engine constraints. Do not edit by hand."""

ENGINES: tuple[tuple[str, str], ...] = (
    ("vllm", "vLLM"),
    ("sglang", "SGLang"),
    ("llamacpp", "llama.cpp"),
    ("trtllm", "TensorRT-LLM"),
)
