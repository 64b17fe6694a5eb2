"""SGLang's serving defaults: the page size and static memory fraction of ServerArgs, and the
post-process pass that fills the page size. Read with tree-sitter (server_args.py is 400 KB, most
of it field help texts no reader needs): names, literals and the source text of expressions.
Pure: file text in, records out."""

from __future__ import annotations

import re
from functools import lru_cache

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.limits import check_syntax_tree
from apron.extractors.parsing.python_forms import body_statements
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    PYTHON,
    arguments,
    attribute_name,
    call_name,
    class_fields,
    code_of,
    defined_name,
    field_default,
    import_source,
    imported_names,
    methods_of,
    node_text,
    number_literal,
    parse_once,
    parse_python,
    returned,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    undecorated,
    unparenthesize,
)
from apron.extractors.parsing.ts_query import typed_descendants
from apron.extractors.serving.records import ServingDefault

SERVER_ARGS_PATHS = ("python/sglang/srt/server_args.py",)
SERVER_ARGS_CLASS = "ServerArgs"
PAGE_SIZE, MEM_FRACTION = "page_size", "mem_fraction_static"
PAGE_HANDLER = "_handle_page_size"
PASS_RUNNER = "run_post_process_pass"

# What the platform probes return on a CUDA machine; any other call is unknown.
CUDA_PROBES = {
    "is_cuda": True,
    "is_cuda_alike": True,
    "is_hip": False,
    "is_musa": False,
    "is_npu": False,
    "is_xpu": False,
    "is_cpu": False,
    "is_hpu": False,
    "is_mps": False,
    "use_mlx": False,
}


def compact(node: Node) -> str:
    """A node's code as one canonical line (python_ts.code_of)."""
    return code_of(node)


def _is_none(node: Node) -> bool:
    return unparenthesize(node).type == "none"


def on_cuda(test: Node, given_none: str = "") -> bool | None:
    """The value of a guard on CUDA (`is_hip() and ...`, `not is_musa()`); None when unknown.
    `x.<given_none> is not None` reads as False: the default is being computed."""
    test = unparenthesize(test)
    if test.type == "not_operator":
        inner = on_cuda(test.child_by_field_name("argument"), given_none)
        return None if inner is None else not inner
    if test.type == "boolean_operator":
        left = on_cuda(test.child_by_field_name("left"), given_none)
        right = on_cuda(test.child_by_field_name("right"), given_none)
        if node_text(test.child_by_field_name("operator")) == "and":
            if left is False or right is False:
                return False
            return True if left and right else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    if test.type == "call":
        function = unparenthesize(test.child_by_field_name("function"))
        if function.type == "identifier" and not arguments(test):
            return CUDA_PROBES.get(node_text(function))
        return None
    compared = single_comparison(test) if given_none else None
    if (
        compared is not None
        and compared[1] == "is not"
        and attribute_name(compared[0]) == given_none
        and unparenthesize(compared[2]).type == "none"
    ):
        return False
    return None


def _dict_value(node: Node | None, key: str) -> Node | None:
    if node is None:
        return None
    node = unparenthesize(node)
    if node.type == "dictionary":
        for element in node.named_children:
            if element.type == "pair" and string_value(element.child_by_field_name("key")) == key:
                return element.child_by_field_name("value")
    return None


# ---------------------------------------------------------------- ServerArgs


HANDLER_HEADER = re.compile(rf"[ \t]*(?:async[ \t]+)?def[ \t]+{PAGE_HANDLER}\b")


def _read_by_the_defaults(method: str) -> bool:
    """The methods whose bodies the defaults look into: the page-size handler, and those that
    name the memory fraction (only they can test or set it); and any method with a triple quote
    that is not its docstring's (the line-based pass could take the code after it for a string)."""
    return (
        MEM_FRACTION in method
        or HANDLER_HEADER.match(method) is not None
        or not quotes_only_in_docstring(method)
    )


@lru_cache(maxsize=2)
@lru_cache(maxsize=2)
def _server_args_tree(text: str, path: str) -> Node:
    """The module of server_args.py with the other methods' bodies elided (a line-based pass,
    extractors/parsing/python_skeleton: they are 40% of the file), or of the whole file when
    that does not parse cleanly (its errors are the whole file's). Kept for the next reader:
    the page size and the memory fraction are read from one text."""
    skeleton = parse_once(method_skeleton(text, keep=_read_by_the_defaults))
    if skeleton.has_error:
        return parse_python(text, path)
    check_syntax_tree(skeleton, path, "Python")
    return skeleton


def server_args_class(text: str, path: str) -> Node:
    root = _server_args_tree(text, path)
    classes = [
        s
        for s in root.named_children
        if undecorated(s).type == "class_definition"
        and defined_name(undecorated(s)) == SERVER_ARGS_CLASS
    ]
    if not classes:
        raise AnchorError(
            f"class {SERVER_ARGS_CLASS} is not defined in {path}",
            paths=[path],
            anchor=SERVER_ARGS_CLASS,
        )
    return undecorated(classes[-1])


def _field(cls: Node, setting: str, path: str) -> Node:
    fields = class_fields(cls)
    if setting not in fields:
        anchor = f"{SERVER_ARGS_CLASS}.{setting}"
        raise AnchorError(f"{anchor} is not a field in {path}", paths=[path], anchor=anchor)
    return field_default(fields[setting])


POOL_RATIOS = ("swa_full_tokens_ratio", "mamba_full_memory_ratio")


def pool_ratio_defaults(text: str, path: str) -> list[ServingDefault]:
    """ServerArgs' literal defaults of the pool ratios (role = the setting); a ratio that is not a
    field at this commit gives no row."""
    cls = server_args_class(text, path)
    fields = class_fields(cls)
    rows = []
    for setting in POOL_RATIOS:
        if setting not in fields:
            continue
        default = field_default(fields[setting])
        literal = number_literal(default)
        symbol = f"{SERVER_ARGS_CLASS}.{setting}"
        if literal is not None:
            rows.append(_literal_row(setting, setting, literal, "", path, symbol))
        else:
            rows.append(
                ServingDefault(
                    setting=setting,
                    role=setting,
                    kind="opaque",
                    value="",
                    candidates=(),
                    computed_by="",
                    reason=f"the default {compact(default)} is not a literal",
                    path=path,
                    symbol=symbol,
                )
            )
    return rows


def _literal_row(setting: str, role: str, value: str, reason: str, path: str, symbol: str):
    return ServingDefault(
        setting=setting,
        role=role,
        kind="literal",
        value=value,
        candidates=(),
        computed_by="",
        reason=reason,
        path=path,
        symbol=symbol,
    )


# Every node type the readers look for, in one query (each query compiled costs 2-4 ms).
READ_TYPES = ("assignment", "call", "elif_clause", "if_statement", "import_from_statement", "pair")


def _descendants(node: Node, *types: str) -> list[Node]:
    """The nodes of `types` (some of READ_TYPES) under `node`, in source order."""
    return [n for n in typed_descendants(PYTHON, node, READ_TYPES) if n.type in types]


def page_size_source(text: str, path: str) -> ServingDefault | tuple[str, str, str]:
    """The page size default, or where it is computed: (module path, function, handler symbol)
    for `ServerArgs._handle_page_size` running a post-process pass imported from a module."""
    cls = server_args_class(text, path)
    default = _field(cls, PAGE_SIZE, path)
    symbol = f"{SERVER_ARGS_CLASS}.{PAGE_SIZE}"
    literal = number_literal(default)
    if literal is not None:
        return _literal_row(PAGE_SIZE, "block_tokens", literal, "", path, symbol)
    handler = methods_of(cls).get(PAGE_HANDLER)
    handler_symbol = f"{SERVER_ARGS_CLASS}.{PAGE_HANDLER}"
    if handler is None:
        raise AnchorError(
            f"{handler_symbol} is not defined in {path}", paths=[path], anchor=handler_symbol
        )
    for node in _descendants(handler, "assignment"):
        assigned = single_assignment(node)
        if assigned is not None and attribute_name(assigned[0]) == PAGE_SIZE:
            value = number_literal(assigned[1])
            if value is not None:
                reason = f"None, set in {handler_symbol}"
                return _literal_row(PAGE_SIZE, "block_tokens", value, reason, path, symbol)
    imported: dict[str, str] = {}
    for node in _descendants(handler, "import_from_statement"):
        source = import_source(node)
        for _local, name in imported_names(node):
            imported[name] = source[1] if source is not None else ""
    for node in _descendants(handler, "call"):
        args = arguments(node)
        if call_name(node) == PASS_RUNNER and len(args) == 2:
            function = unparenthesize(args[1])
            if function.type == "identifier" and node_text(function) in imported:
                module = imported[node_text(function)]
                return (
                    "python/" + module.replace(".", "/") + ".py",
                    node_text(function),
                    (handler_symbol),
                )
    return ServingDefault(
        setting=PAGE_SIZE,
        role="block_tokens",
        kind="opaque",
        value="",
        candidates=(),
        computed_by=handler_symbol,
        reason=f"{handler_symbol} neither sets a literal nor runs an imported pass",
        path=path,
        symbol=symbol,
    )


def _is_none_test(test: Node, setting: str) -> bool:
    """`self.<setting> is None`."""
    compared = single_comparison(test)
    return (
        compared is not None
        and compared[1] == "is"
        and attribute_name(compared[0]) == setting
        and _is_none(compared[2])
    )


def _if_subtree(node: Node) -> list[Node]:
    """The nodes an `if` (or an `elif`, with the clauses after it) spans: the elif and else
    clauses are the if's children, as `if` nests them."""
    spans = [node]
    if node.type == "elif_clause" and node.parent is not None:
        later = [c for c in node.parent.children if c.start_byte > node.start_byte]
        spans += [c for c in later if c.type in ("elif_clause", "else_clause")]
    return spans


def mem_fraction_default(text: str, path: str) -> ServingDefault:
    """ServerArgs.mem_fraction_static: a literal, or the method that computes it when None."""
    cls = server_args_class(text, path)
    default = _field(cls, MEM_FRACTION, path)
    symbol = f"{SERVER_ARGS_CLASS}.{MEM_FRACTION}"
    literal = number_literal(default)
    if literal is not None:
        return _literal_row(MEM_FRACTION, "memory_fraction", literal, "", path, symbol)
    for name, method in methods_of(cls).items():
        for node in _descendants(method, "if_statement", "elif_clause"):
            if not _is_none_test(node.child_by_field_name("condition"), MEM_FRACTION):
                continue
            for span in _if_subtree(node):
                for inner in _descendants(span, "assignment"):
                    assigned = single_assignment(inner)
                    if assigned is None or attribute_name(assigned[0]) != MEM_FRACTION:
                        continue
                    value = assigned[1]
                    candidates: tuple[str, ...] = ()
                    choice = unparenthesize(value)
                    if choice.type == "conditional_expression":
                        _body, condition, orelse = choice.named_children[:3]
                        if number_literal(orelse) is not None:
                            test = compact(condition).removesuffix(" is not None")
                            candidates = (f"{test} is None -> {number_literal(orelse)}",)
                    return ServingDefault(
                        setting=MEM_FRACTION,
                        role="memory_fraction",
                        kind="computed",
                        value="",
                        candidates=candidates,
                        computed_by=f"{SERVER_ARGS_CLASS}.{name}",
                        reason="computed at startup from GPU memory: " + compact(value),
                        path=path,
                        symbol=f"{SERVER_ARGS_CLASS}.{name}",
                    )
    return ServingDefault(
        setting=MEM_FRACTION,
        role="memory_fraction",
        kind="opaque",
        value="",
        candidates=(),
        computed_by="",
        reason=f"the default {compact(default)} is not a literal and no "
        f"{SERVER_ARGS_CLASS} method sets it when it is None",
        path=path,
        symbol=symbol,
    )


# ---------------------------------------------------------------- the page-size pass


def _literal_sets(root: Node, setting: str) -> list[tuple[str, str]]:
    """(function, value) for every literal a module-level function gives `setting`
    (`setting = N`, `x.setting = N` or `{"setting": N}`)."""
    found = []
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type != "function_definition":
            continue
        function = defined_name(definition)
        for node in _descendants(statement, "assignment", "pair"):
            if node.type == "assignment":
                assigned = single_assignment(node)
                if assigned is None:
                    continue
                target = assigned[0]
                name = (
                    node_text(target)
                    if target.type == "identifier"
                    else attribute_name(target)
                    if target.type == "attribute"
                    else ""
                )
                value = number_literal(assigned[1]) if name == setting else None
            elif (
                node.parent is not None
                and node.parent.type == "dictionary"
                and string_value(node.child_by_field_name("key")) == setting
            ):
                given = node.child_by_field_name("value")
                value = number_literal(given)
                choice = unparenthesize(given)
                if value is None and choice.type == "conditional_expression":
                    body, _condition, orelse = choice.named_children[:3]
                    for part in (body, orelse):
                        if number_literal(part) is not None:
                            found.append((function, number_literal(part)))
            else:
                continue
            if value is not None:
                found.append((function, value))
    return found  # type: ignore[return-value]


def page_size_from_pass(text: str, path: str, function: str, handler: str) -> ServingDefault:
    """The page size the pass `function` gives on CUDA when none was given, with the values
    every other function of the module may set as candidates."""
    root = parse_python(text, path)
    definition = next(
        (
            undecorated(s)
            for s in root.named_children
            if undecorated(s).type == "function_definition"
            and defined_name(undecorated(s)) == function
        ),
        None,
    )
    if definition is None:
        raise AnchorError(
            f"the page size pass {function} is not defined in {path}",
            paths=[path],
            anchor=function,
        )
    branches: list[str] = []
    value: str | None = None
    why = ""
    for statement in body_statements(definition):
        if statement.type == "if_statement":
            inner = statements(statement.child_by_field_name("consequence"))
            result = returned(inner[-1]) if inner else None
            given = number_literal(_dict_value(result, PAGE_SIZE))
            condition = statement.child_by_field_name("condition")
            holds = on_cuda(condition, PAGE_SIZE)
            test = compact(condition)
            if given is not None:
                branches.append(f"{test} -> {given}")
            if holds is None:
                why = f"the guard {test} cannot be evaluated for CUDA"
                break
            if holds:
                value = given
                if value is None:
                    why = f"the branch {test}, taken on CUDA, gives no literal page size"
                break
        elif statement.type == "return_statement":
            given = number_literal(_dict_value(returned(statement), PAGE_SIZE))
            if given is not None:
                branches.append(f"otherwise -> {given}")
            value = given
            if value is None:
                why = "the final return gives no literal page size"
            break
    others = sorted(
        {f"{fn} -> {v}" for fn, v in _literal_sets(root, PAGE_SIZE) if fn != function},
        key=lambda c: (c.split(" -> ")[0], int(c.split(" -> ")[1])),
    )
    candidates = tuple(branches) + tuple(f"may be set by {c}" for c in others)
    symbol = function
    if value is None:
        return ServingDefault(
            setting=PAGE_SIZE,
            role="block_tokens",
            kind="opaque",
            value="",
            candidates=candidates,
            computed_by=function,
            reason=why or f"{function} gives no page size on CUDA",
            path=path,
            symbol=symbol,
        )
    return ServingDefault(
        setting=PAGE_SIZE,
        role="block_tokens",
        kind="cuda",
        value=value,
        candidates=candidates,
        computed_by="",
        reason=f"None, filled by {function} (run from {handler}); the attention-backend passes "
        "in candidates may replace it",
        path=path,
        symbol=symbol,
    )
