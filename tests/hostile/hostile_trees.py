"""Miniature engine trees whose every file carries code that would act if it were ever imported,
executed, compiled or rendered: create a marker file, connect to a local socket, loop forever.

The payloads sit at module top level and in a class body (and fill package `__init__` files and
the model modules a registry names), so any import or exec of a file runs them; nothing in them
changes the facts."""

from __future__ import annotations

from pathlib import Path

from tests.hostile.helpers import clean_tree


def python_payload(marker: Path, port: int) -> str:
    return f"""

# ---- hostile: runs if this module is ever imported or executed
import socket as _hostile_socket

with open({str(marker)!r}, "a") as _hostile_out:
    _hostile_out.write("python " + __name__ + "\\n")
try:
    _hostile_socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
except OSError:
    pass


class _HostileAtClassCreation:
    open({str(marker)!r}, "a").write("class body\\n")


while True:
    pass
"""


def cpp_payload(marker: Path, port: int) -> str:
    return f"""

// ---- hostile: runs at load time if this file is ever compiled and linked
#include <cstdlib>
static const int hostile_marker = []() {{
    std::system("touch {marker}; exec 3<>/dev/tcp/127.0.0.1/{port}");
    for (;;) {{}}
    return 0;
}}();
"""


def markdown_payload(marker: Path, port: int) -> str:
    return f"""

## Building these docs

<script>fetch("http://127.0.0.1:{port}/"); while (true) {{}}</script>

```bash
touch {marker}
```

```{{eval-rst}}
.. raw:: html

   <img src="http://127.0.0.1:{port}/x.png">
```
"""


# Files the extractors do not read but that an importer would reach first (package __init__,
# the modules the registry names, build files): they must stay unread and unrun too.
EXTRA_PYTHON = {
    "vllm": [
        "vllm/__init__.py",
        "vllm/model_executor/models/__init__.py",
        "vllm/model_executor/models/llama.py",
        "vllm/model_executor/models/deepseek_v2.py",
        "setup.py",
    ],
    "llamacpp": ["gguf-py/gguf/__init__.py", "setup.py"],
    "sglang": ["python/sglang/__init__.py", "python/sglang/srt/configs/__init__.py", "setup.py"],
    "trtllm": ["tensorrt_llm/__init__.py", "tensorrt_llm/_torch/__init__.py", "setup.py"],
}


def hostile_tree(engine: str, marker: Path, port: int) -> dict[str, str]:
    """The engine's clean miniature with a payload appended to every source and docs file."""
    tree: dict[str, str] = {}
    for path, text in clean_tree(engine).items():
        if path.endswith(".py"):
            tree[path] = text + python_payload(marker, port)
        elif path.endswith((".cpp", ".h")):
            tree[path] = text + cpp_payload(marker, port)
        elif path.endswith((".md", ".mdx")):
            tree[path] = text + markdown_payload(marker, port)
        else:
            tree[path] = text
    for path in EXTRA_PYTHON[engine]:
        tree.setdefault(path, python_payload(marker, port))
    tree[".gitmodules"] = (
        f'[submodule "third_party/x"]\n\tpath = third_party/x\n'
        f'\turl = ext::sh -c "touch {marker}"\n'
    )
    tree["Makefile"] = f"all:\n\ttouch {marker}\n"
    return tree
