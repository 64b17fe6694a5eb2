"""The reader layer: how every fact reads source. An engine package says where to read and what
a shape means; it never parses by itself.

Python, tree-sitter (every new reader):
- python_ts.py: the one view. Parse entry points (`parse_python` is a ParseError naming file and
  line), blind to comments by construction (each text is parsed with its comments blanked; a
  comment that is data is read on purpose with `comments`), and each primitive once: strings
  (`string_value`), brackets (`unparenthesize`), calls (`call_name`, `call_parts`, `arguments`,
  `keywords`), assignments (`assignments`, `single_assignment`, `assigned_name`: an annotated
  assignment is an assignment), collections, comparisons and boolean chains, if chains
  (`if_clauses`), imports (`from_import`), classes (`top_level_classes`, `class_named`,
  `class_suite`, `methods_of`, `class_methods`, `class_fields`, `field_default`), statements
  (`statements`, `returned`, `assignments_and_ifs`, `walk`), and `code_of`, the canonical
  rendering of any field that carries code (python_canonical.py: the one unparser, and which
  brackets group nothing, which the parse blanks like comments).
- python_classes.py: class bases (`class_bases`, `base_names`) and the one C3 linearization
  (`c3_linearization`); python_imports.py: import resolution (`absolute_module`,
  `imported_module`, `imported_path_stem`); config_reads.py: reads of a model config's fields
  with the one table of config roots (`config_read`, `CONFIG_ROOTS`) and a condition's truth
  when the field is absent (`truth_when_absent`); python_forms.py: an `if`/`elif` as a
  `Branch`, a function's `parameters`, `binary` and `unary` operations; python_describe.py:
  small rule expressions in words (`ExpressionDescriber`, `int_value`, `string_sequence`).
- python_skeleton.py: a module's text with the method bodies a fact does not read elided, line by
  line, so tree-sitter parses less (`clean_tree`: the skeleton's tree, else the whole file's).
- python_top_level.py: a module's text reduced to its top-level bindings (SGLang's registry scan).
- outline_imports.py, signature_text.py: plain imports and parameter lists read from a module
  outline's text (vLLM's class tree), with the nodes as the fallback for any other shape.
- ts_query.py: tree-sitter queries for "every node of these types" walks.

Python has no second reader: libcst is gone (the KV-head scan and its overrides, the MLA gates,
the tensor-parallel rules and vLLM's CUDA block size read tree-sitter's tree like every fact).

C++: cpp_ts.py (tree-sitter-cpp with the preprocessor's conditionals, redundant brackets blanked)
and cpp_canonical.py (code fields token by token with one spacing rule). Markdown: markdown.py
(markdown-it-py). Shared by all: limits.py (size, depth and cost bounds on hostile input),
workers.py and collections_paced.py (two cores, fewer garbage collections).
"""
