"""Static extractors of serving-engine constraints (vLLM, llama.cpp, SGLang, TensorRT-LLM)."""
