"""llama.cpp's hparams loading as steps apron replays: the member defaults of `struct
llama_hparams` (src/llama-hparams.h), the base loader every architecture runs
(`llama_model_base::load_hparams`, or `llama_model::load_hparams` with its `switch (arch)` in the
older layout), each architecture's `load_arch_hparams` (src/models/*.cpp) and the
`llama_hparams` helpers they call (`set_swa_pattern`, src/llama-hparams.cpp).

Each statement that can change an hparams member becomes one HparamsStep, in source order, with
the reverse-Polish condition of the ifs and switch cases it sits under: a GGUF key read
(`ml.get_key` / `get_key_or_arr` / `get_arr`, its key resolved through LLM_KV_NAMES, whether it
is required, the local bound to "found"), an assignment, a per-layer loop, a `std::fill`, a call
of another loader function, a `GGML_ASSERT` or `throw` (what refuses a file) and a `return`.
Locals are `$name` (a fresh scope per call). A statement of another shape that writes an hparams
member is an `unread` step naming the member, so apron knows that member is unknown and why."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

from apron.extractors.llamacpp.cpp_formula import UnreadableFormula, formula, name_token
from apron.extractors.llamacpp.records import HparamsStep
from apron.extractors.parsing.cpp_ts import (
    CppSource,
    call_arguments,
    call_name,
    code_children,
    compact,
    declarator_name,
    function_body,
    function_declarations,
    function_definitions,
    node_text,
    nodes_of_type,
    parse_cpp,
    switch_case_groups,
)
from apron.extractors.records import ExtractionWarning, warning

HPARAMS_STRUCT = "llama_hparams"
BASE_LOADERS = ("llama_model_base::load_hparams", "llama_model::load_hparams")
ARCH_LOADER = "load_arch_hparams"
HELPERS = ("set_swa_pattern",)  # llama_hparams methods the loaders call that write members
KEY_READERS = {
    "get_key": "scalar",
    "get_key_or_arr": "scalar_or_array",
    "get_arr": "array",
    "get_arr_n": "array_length",
}
SKIPPED_CALLS = re.compile(r"^(LLAMA_LOG_\w+|GGML_LOG_\w+|printf|fprintf)$")


@dataclass
class _Function:
    """One function being read: its name, owner and the steps found so far."""

    name: str
    archs: tuple[str, ...]
    path: str
    member_owner: bool  # a llama_hparams method: bare names are members
    locals_: dict[str, tuple[str, ...]] = field(default_factory=dict)
    local_types: dict[str, str] = field(default_factory=dict)
    steps: list[HparamsStep] = field(default_factory=list)
    warnings: list[ExtractionWarning] = field(default_factory=list)
    loops: list[int] = field(default_factory=list)


def _conjunction(conditions: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    for i, c in enumerate(conditions):
        out.extend(c)
        if i:
            out.append("&&")
    return tuple(out)


class StepReader:
    """Turns one function body into HparamsStep rows."""

    def __init__(
        self,
        function: str,
        archs: tuple[str, ...],
        path: str,
        keys: Mapping[str, str],
        member_types: Mapping[str, str],
        parameters: Sequence[tuple[str, str, tuple[str, ...]]] = (),
    ) -> None:
        owner = function.rpartition("::")[0]
        self.f = _Function(function, archs, path, member_owner=owner == HPARAMS_STRUCT)
        self.keys = keys
        self.member_types = member_types
        for order, (name, type_, default) in enumerate(parameters):
            self.f.locals_[name] = (f"${name}",)
            self.f.local_types[name] = type_
            self._add("param", (), target=f"${name}", target_type=type_, value=default, order=order)

    # ------------------------------------------------------------ names

    def _target(self, node: Node) -> tuple[str, str] | None:
        """(target token, declared type) of an assignment's left side; None for a member of
        something other than llama_hparams (llama_model's `type`, a vector of labels)."""
        text = re.sub(r"\s+", "", node_text(node))
        if text in self.f.locals_:
            return f"${text}", self.f.local_types.get(text, "")
        stripped = name_token(text)
        member = stripped != text or self.f.member_owner
        if not member or not re.fullmatch(r"\w+", stripped):
            return None
        return stripped, self.member_types.get(stripped, "")

    def _tokens(self, node: Node, conditions: tuple) -> tuple[str, ...]:
        """Reverse-Polish tokens of an expression; a GGUF key read inside it (a condition such
        as `!ml.get_key(...)` or `a || b`) becomes a key step first, its `found` in its place."""
        kind = node.type
        if kind == "call_expression" and _key_reader(node):
            return (self._key(node, conditions, found=f"$found{len(self.f.steps)}"),)
        if kind == "parenthesized_expression":
            inner = code_children(node)
            if len(inner) == 1:
                return self._tokens(inner[0], conditions)
        if kind == "unary_expression" and _has_key_read(node):
            argument = node.child_by_field_name("argument")
            operator = node.child_by_field_name("operator")
            if argument is not None and operator is not None and node_text(operator) == "!":
                return (*self._tokens(argument, conditions), "!")
        if kind == "binary_expression" and _has_key_read(node):
            operator = node_text(node.child_by_field_name("operator"))
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if operator in ("&&", "||") and left is not None and right is not None:
                a = self._tokens(left, conditions)
                guard = a if operator == "&&" else (*a, "!")
                b = self._tokens(right, (*conditions, guard))
                return (*a, *b, operator)
        if _has_key_read(node):
            raise UnreadableFormula(f"a key read inside {kind}")
        return formula(node, self.f.locals_)

    # ------------------------------------------------------------ steps

    def _add(self, kind: str, conditions: tuple, **fields) -> HparamsStep:
        order = fields.pop("order", len(self.f.steps))
        step = HparamsStep(
            function=self.f.name,
            archs=self.f.archs,
            order=order,
            kind=kind,
            target=fields.get("target", ""),
            target_type=fields.get("target_type", ""),
            key=fields.get("key", ""),
            key_form=fields.get("key_form", ""),
            required=fields.get("required", False),
            found=fields.get("found", ""),
            value=fields.get("value", ()),
            arguments=fields.get("arguments", ()),
            index=fields.get("index", ()),
            loop=self.f.loops[-1] if self.f.loops else -1,
            condition=_conjunction(conditions),
            unknown=fields.get("unknown", ""),
            code=fields.get("code", ""),
            path=self.f.path,
            symbol=self.f.name,
        )
        self.f.steps.append(step)
        return step

    def _unread(self, node: Node, conditions: tuple, why: str, target: str = "") -> None:
        self._add("unread", conditions, target=target, unknown=why, code=compact(node))
        self.f.warnings.append(
            warning(
                "unread-step",
                self.f.name,
                f"{why}: {compact(node)[:120]}",
                self.f.path,
                self.f.name,
            )
        )

    def _key(self, call: Node, conditions: tuple, found: str = "") -> str:
        args = call_arguments(call)
        method = call_name(call).rpartition(".")[2]
        form = KEY_READERS[method]
        key_name = node_text(args[0]) if args else ""
        key = self.keys.get(key_name, "")
        target = self._target(args[1]) if len(args) > 1 else None
        required_node = None
        count: tuple[str, ...] = ()
        if form == "scalar_or_array" and len(args) >= 4:  # (key, array, n, required)
            count = self._plain(args[2])
            required_node = args[3]
        elif form == "scalar_or_array" and len(args) == 3 and _is_bool(args[2]):
            required_node = args[2]
        elif form == "scalar_or_array" and len(args) == 3:  # (key, array, n): required
            count = self._plain(args[2])
        elif len(args) >= 3:
            required_node = args[2]
        required = required_node is None or node_text(required_node) != "false"
        if target is not None and target[1].startswith("std::array") and form == "scalar_or_array":
            form = "per_layer"
        if not key:
            self._add(
                "unread",
                conditions,
                target=target[0] if target else "",
                found=found,
                unknown=f"the GGUF key {key_name} is not in LLM_KV_NAMES",
                code=compact(call),
            )
            return found
        self._add(
            "key",
            conditions,
            target=target[0] if target else "",
            target_type=target[1] if target else "",
            key=key,
            key_form=form,
            required=required,
            found=found,
            value=count,
            code=compact(call),
        )
        return found

    def _plain(self, node: Node) -> tuple[str, ...]:
        try:
            return formula(node, self.f.locals_)
        except UnreadableFormula:
            return ()

    def block(self, node: Node, conditions: tuple = ()) -> None:
        statements = code_children(node) if node.type == "compound_statement" else [node]
        for statement in statements:
            self.statement(statement, conditions)

    def statement(self, node: Node, conditions: tuple) -> None:
        kind = node.type
        if kind == "compound_statement":
            self.block(node, conditions)
        elif kind == "expression_statement":
            for expr in code_children(node):
                self.expression(expr, conditions)
        elif kind == "declaration":
            self.declaration(node, conditions)
        elif kind == "if_statement":
            self.if_statement(node, conditions)
        elif kind == "for_statement":
            self.for_statement(node, conditions)
        elif kind == "switch_statement":
            self.switch_statement(node, conditions)
        elif kind == "return_statement":
            self._add("return", conditions, code=compact(node))
        elif kind == "throw_statement":
            self._add("throw", conditions, code=compact(node))
        elif kind in ("break_statement", "empty_statement"):
            pass
        elif _writes_member(node):
            self._unread(node, conditions, f"a {kind} this reader does not follow")

    def expression(self, expr: Node, conditions: tuple) -> None:
        kind = expr.type
        if kind == "assignment_expression":
            left = expr.child_by_field_name("left")
            right = expr.child_by_field_name("right")
            operator = node_text(expr.child_by_field_name("operator"))
            if left is None or right is None:
                return
            index: tuple[str, ...] = ()
            array = left
            if left.type == "subscript_expression":
                array = left.child_by_field_name("argument") or left
                indices = left.child_by_field_name("indices")
                inner = code_children(indices) if indices is not None else []
                index = self._plain(inner[0]) if len(inner) == 1 else ()
                if not index:
                    self._unread(expr, conditions, "an index this reader does not read")
                    return
            target = self._target(array)
            if target is None:
                return
            if operator != "=":
                self._unread(expr, conditions, f"a compound assignment {operator}", target[0])
                return
            try:
                value = self._tokens(right, conditions)
            except UnreadableFormula as err:
                self._add(
                    "unread",
                    conditions,
                    target=target[0],
                    index=index,
                    unknown=f"a value this reader does not read ({err})",
                    code=compact(expr),
                )
                return
            self._add(
                "assign",
                conditions,
                target=target[0],
                target_type=target[1],
                value=value,
                index=index,
                code=compact(expr),
            )
        elif kind == "call_expression":
            self.call(expr, conditions)
        elif kind == "binary_expression" and _has_key_read(expr):
            try:
                self._tokens(expr, conditions)
            except UnreadableFormula as err:
                self._unread(expr, conditions, str(err))
        elif _writes_member(expr):
            self._unread(expr, conditions, f"a {kind} this reader does not follow")

    def call(self, call: Node, conditions: tuple) -> None:
        name = call_name(call)
        method = name.rpartition(".")[2]
        args = call_arguments(call)
        if _key_reader(call):
            self._key(call, conditions)
        elif SKIPPED_CALLS.match(name):
            pass
        elif name == "GGML_ASSERT" and len(args) == 1:
            checked = _bare(args[0])
            right = (
                _bare(checked.child_by_field_name("right"))
                if checked.type == "binary_expression"
                else None
            )
            if right is not None and right.type == "string_literal":  # (cond && "message")
                checked = checked.child_by_field_name("left")
            try:
                value = self._tokens(checked, conditions)
            except UnreadableFormula as err:
                self._add("assert", conditions, unknown=str(err), code=compact(call))
                return
            self._add("assert", conditions, value=value, code=compact(call))
        elif name == "std::fill" and len(args) == 3:
            array = (
                args[0].child_by_field_name("function")
                if args[0].type == "call_expression"
                else None
            )
            holder = array.child_by_field_name("argument") if array is not None else None
            target = self._target(holder) if holder is not None else None
            if target is None:
                return
            try:
                value = self._tokens(args[2], conditions)
            except UnreadableFormula as err:
                self._unread(
                    call, conditions, f"a fill value this reader does not read ({err})", target[0]
                )
                return
            self._add(
                "fill",
                conditions,
                target=target[0],
                target_type=target[1],
                value=value,
                code=compact(call),
            )
        elif method in HELPERS or method == ARCH_LOADER or name.endswith(f"::{ARCH_LOADER}"):
            owner_is_hparams = name.startswith("hparams.") or self.f.member_owner
            if method in HELPERS and not owner_is_hparams:
                return
            arguments = []
            for a in args:
                if node_text(a) == "ml":
                    continue
                try:
                    arguments.append(self._tokens(a, conditions))
                except UnreadableFormula as err:
                    self._unread(call, conditions, f"an argument this reader does not read ({err})")
                    return
            target = name.split(".")[-1] if method in HELPERS else name
            self._add(
                "call", conditions, target=target, arguments=tuple(arguments), code=compact(call)
            )
        elif _writes_member(call):
            self._unread(call, conditions, f"a call of {name} that may write hparams")

    def declaration(self, node: Node, conditions: tuple) -> None:
        type_node = node.child_by_field_name("type")
        type_ = compact(type_node) if type_node is not None else ""
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type != "init_declarator":
                name = _local_name(declarator)
                self._declare(name, type_)
                self._add(
                    "assign",
                    conditions,
                    target=f"${name}",
                    target_type=type_,
                    value=("0",),
                    code=compact(node),
                )
                continue
            name = _local_name(declarator.child_by_field_name("declarator"))
            value = declarator.child_by_field_name("value")
            self._declare(name, type_)
            if value is None or value.type in ("argument_list", "initializer_list"):
                self._add(
                    "unread",
                    conditions,
                    target=f"${name}",
                    unknown="an initializer this reader does not read",
                    code=compact(node),
                )
                continue
            if value.type == "call_expression" and _key_reader(value):
                self._key(value, conditions, found=f"${name}")
                continue
            try:
                tokens = self._tokens(value, conditions)
            except UnreadableFormula as err:
                self._add(
                    "unread",
                    conditions,
                    target=f"${name}",
                    unknown=f"a value this reader does not read ({err})",
                    code=compact(node),
                )
                continue
            self._add(
                "assign",
                conditions,
                target=f"${name}",
                target_type=type_,
                value=tokens,
                code=compact(node),
            )

    def _declare(self, name: str, type_: str) -> None:
        self.f.locals_[name] = (f"${name}",)
        self.f.local_types[name] = type_

    def if_statement(self, node: Node, conditions: tuple) -> None:
        clause = node.child_by_field_name("condition")
        if clause is None:
            self._unread(node, conditions, "an if without a condition")
            return
        init = clause.child_by_field_name("initializer")
        if init is not None:
            for part in code_children(init):
                self.statement(part, conditions)
        value = clause.child_by_field_name("value")
        if value is None:
            kids = [k for k in code_children(clause) if k != init]
            value = kids[-1] if kids else None
        if value is not None and value.type == "declaration":  # if (T x = ...) {...}
            self.declaration(value, conditions)
            declarator = value.child_by_field_name("declarator")
            inner = declarator.child_by_field_name("declarator") if declarator is not None else None
            tokens: tuple[str, ...] | None = (
                (f"${node_text(inner)}",) if inner is not None else None
            )
        else:
            try:
                tokens = self._tokens(value, conditions) if value is not None else None
            except UnreadableFormula:
                tokens = None
        if tokens is None:
            self._poison(node, conditions, "a condition this reader does not read")
            return
        consequence = node.child_by_field_name("consequence")
        if consequence is not None:
            self.block(consequence, (*conditions, tokens))
        alternative = node.child_by_field_name("alternative")
        if alternative is not None:
            for part in code_children(alternative):
                self.statement(part, (*conditions, (*tokens, "!")))

    def _poison(self, node: Node, conditions: tuple, why: str) -> None:
        """Every member written below an unreadable condition becomes an unread step."""
        written = sorted(_members_written(node, self))
        if not written:
            return
        for target in written:
            self._add("unread", conditions, target=target, unknown=why, code=compact(node)[:200])
        self.f.warnings.append(
            warning(
                "unread-condition",
                self.f.name,
                f"{why}: {compact(node)[:120]}",
                self.f.path,
                self.f.name,
            )
        )

    def for_statement(self, node: Node, conditions: tuple) -> None:
        init = node.child_by_field_name("initializer")
        test = node.child_by_field_name("condition")
        update = node.child_by_field_name("update")
        body = node.child_by_field_name("body")
        variable = None
        start: tuple[str, ...] = ()
        if init is not None and init.type == "declaration":
            declarators = init.children_by_field_name("declarator")
            if len(declarators) == 1 and declarators[0].type == "init_declarator":
                variable = node_text(declarators[0].child_by_field_name("declarator"))
                start = self._plain(declarators[0].child_by_field_name("value"))
        bound: tuple[str, ...] = ()
        test = _bare(test)
        if variable and test is not None and test.type == "binary_expression":
            left = _bare(test.child_by_field_name("left"))
            if node_text(test.child_by_field_name("operator")) == "<" and left is not None:
                if node_text(left) == variable:
                    self._declare(variable, "uint32_t")
                    bound = self._plain(test.child_by_field_name("right"))
        steps_up = update is not None and re.fullmatch(
            rf"(\+\+{variable}|{variable}\+\+)", re.sub(r"\s+", "", node_text(update))
        )
        if not (variable and start and bound and steps_up and body is not None):
            self._poison(node, conditions, "a loop this reader does not follow")
            return
        loop = self._add(
            "loop",
            conditions,
            target=f"${variable}",
            value=start,
            arguments=(bound,),
            code=compact(node).split("{")[0].strip(),
        )
        self.f.loops.append(loop.order)
        self.block(body, ())
        self.f.loops.pop()

    def switch_statement(self, node: Node, conditions: tuple) -> None:
        subject = node.child_by_field_name("condition")
        inner = code_children(subject) if subject is not None else []
        try:
            subject_tokens = self._plain_strict(inner[0]) if len(inner) == 1 else None
        except UnreadableFormula:
            subject_tokens = None
        groups = switch_case_groups(node)
        if subject_tokens is None:
            self._poison(node, conditions, "a switch on a value this reader does not read")
            return
        every_label = sorted(
            (*subject_tokens, *self._plain(label), "==") for g in groups for label in g.labels
        )
        for group in groups:
            tests = sorted((*subject_tokens, *self._plain(label), "==") for label in group.labels)
            statements = list(group.statements)
            if statements and statements[-1].type == "break_statement":
                statements = statements[:-1]
            elif statements and not _ends_flow(statements[-1]):
                if any(_writes_member(s) or _members_written(s, self) for s in statements):
                    self._poison(node, conditions, "a switch case that falls through")
                    return
            if group.has_default:  # no label of the switch matches
                test = _conjunction([(*o, "!") for o in every_label]) if every_label else ("1",)
            else:  # the order of `case` labels means nothing
                test = tests[0]
                for other in tests[1:]:
                    test = (*test, *other, "||")
            for statement in statements:
                self.statement(statement, (*conditions, test))

    def _plain_strict(self, node: Node) -> tuple[str, ...]:
        return formula(node, self.f.locals_)


def _local_name(declarator: Node | None) -> str:
    """The name a local's declarator declares (through `*`, `&` and `const`)."""
    if declarator is None:
        return ""
    name = declarator_name(declarator)
    if name:
        return name
    found = next((n for n in nodes_of_type(declarator, "identifier")), None)
    return node_text(found) if found is not None else ""


def _ends_flow(node: Node) -> bool:
    if node.type in ("break_statement", "return_statement", "throw_statement"):
        return True
    if node.type == "compound_statement":
        kids = code_children(node)
        return bool(kids) and _ends_flow(kids[-1])
    return False


def _key_reader(node: Node) -> bool:
    if node.type != "call_expression":
        return False
    name = call_name(node)
    return "." in name and name.rpartition(".")[2] in KEY_READERS and name.startswith("ml.")


def _has_key_read(node: Node) -> bool:
    return any(_key_reader(n) for n in nodes_of_type(node, "call_expression"))


def _writes_member(node: Node) -> bool:
    text = node_text(node)
    return "hparams." in text and bool(
        re.search(r"hparams\.\w+\s*(\[[^\]]*\]\s*)?[-+*/]?=(?!=)", text)
    )


def _members_written(node: Node, reader: StepReader) -> set[str]:
    """The hparams members (and locals) assigned anywhere below `node`."""
    out: set[str] = set()
    for n in nodes_of_type(node, "assignment_expression"):
        left = n.child_by_field_name("left")
        if left is not None and left.type == "subscript_expression":
            left = left.child_by_field_name("argument")
        target = reader._target(left) if left is not None else None
        if target is not None:
            out.add(target[0])
    for n in nodes_of_type(node, "call_expression"):
        if _key_reader(n):
            args = call_arguments(n)
            target = reader._target(args[1]) if len(args) > 1 else None
            if target is not None:
                out.add(target[0])
    return out


def _is_bool(node: Node) -> bool:
    return node.type in ("true", "false")


# ---------------------------------------------------------------- the member defaults


def member_defaults(text: str, path: str) -> tuple[list[HparamsStep], dict[str, str]]:
    """`struct llama_hparams` fields: their declared types, and a step per scalar field giving
    its initializer (a field without one is value-initialized to 0: llama_model holds
    `llama_hparams hparams = {}`). std::array fields get no default (the base loader fills
    them)."""
    source = parse_cpp(text, path)
    struct = next(
        (
            n
            for n in nodes_of_type(source.root, "struct_specifier")
            if n.child_by_field_name("name") is not None
            and node_text(n.child_by_field_name("name")) == HPARAMS_STRUCT
            and n.child_by_field_name("body") is not None
        ),
        None,
    )
    if struct is None:
        raise source.missing(f"no struct {HPARAMS_STRUCT} in {path}", f"struct {HPARAMS_STRUCT}")
    types: dict[str, str] = {}
    steps: list[HparamsStep] = []
    for define in nodes_of_type(source.root, "preproc_def"):  # #define LLAMA_MAX_EXPERTS 512
        name_node, value_node = (
            define.child_by_field_name("name"),
            define.child_by_field_name("value"),
        )
        number = (
            re.fullmatch(r"\s*(\d+)[uUlL]*\s*(//.*|/\*.*\*/)?\s*", node_text(value_node))
            if value_node
            else None
        )
        if name_node is None or number is None:
            continue
        steps.append(
            _default_step(
                node_text(name_node),
                "#define",
                (number.group(1),),
                "",
                compact(define),
                path,
                len(steps),
            )
        )
    for item in code_children(struct.child_by_field_name("body")):
        if item.type != "field_declaration":
            continue
        type_node = item.child_by_field_name("type")
        type_ = compact(type_node) if type_node is not None else ""
        type_ = re.sub(r"^(enum|struct) ", "", type_)
        value = item.child_by_field_name("default_value")
        for declarator in item.children_by_field_name("declarator"):
            if declarator.type != "field_identifier":
                continue
            name = node_text(declarator)
            types[name] = type_
            if (
                type_.startswith("std::array")
                or type_.startswith("struct")
                or "llama_hparams_" in type_
            ):
                continue
            tokens: tuple[str, ...] = ("0",)
            unknown = ""
            if value is not None:
                try:
                    tokens = formula(value)
                except UnreadableFormula as err:
                    tokens, unknown = (), f"an initializer this reader does not read ({err})"
            steps.append(
                _default_step(name, type_, tokens, unknown, compact(item), path, len(steps))
            )
    return steps, types


def _default_step(
    name: str, type_: str, tokens: tuple[str, ...], unknown: str, code: str, path: str, order: int
) -> HparamsStep:
    return HparamsStep(
        function=HPARAMS_STRUCT,
        archs=(),
        order=order,
        kind="assign" if not unknown else "unread",
        target=name,
        target_type=type_,
        key="",
        key_form="",
        required=False,
        found="",
        value=tokens,
        arguments=(),
        index=(),
        loop=-1,
        condition=(),
        unknown=unknown,
        code=code,
        path=path,
        symbol=name if type_ == "#define" else f"{HPARAMS_STRUCT}::{name}",
    )


def helper_parameters(
    header: str, header_path: str, method: str
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(name, type, default tokens) of a llama_hparams method's parameters, from its
    declaration in the header (where the defaults are)."""
    source = parse_cpp(header, header_path)
    for name, node in function_declarations(source.root):
        if name.split("::")[-1] != method:
            continue
        declarators = nodes_of_type(node, "function_declarator")
        params = declarators[0].child_by_field_name("parameters") if declarators else None
        out = []
        for param in code_children(params) if params is not None else []:
            type_node = param.child_by_field_name("type")
            declarator = param.child_by_field_name("declarator")
            default = param.child_by_field_name("default_value")
            if declarator is None:
                continue
            out.append(
                (
                    node_text(declarator),
                    compact(type_node) if type_node is not None else "",
                    formula(default) if default is not None else (),
                )
            )
        return out
    return []


# ---------------------------------------------------------------- the whole fact


def read_function(
    source: CppSource,
    definition: Node,
    function: str,
    archs: tuple[str, ...],
    keys: Mapping[str, str],
    member_types: Mapping[str, str],
    parameters: Sequence[tuple[str, str, tuple[str, ...]]] = (),
) -> tuple[list[HparamsStep], list[ExtractionWarning]]:
    body = function_body(definition)
    source.require_clean(body, function)
    reader = StepReader(function, archs, source.path, keys, member_types, parameters)
    reader.block(body)
    return reader.f.steps, reader.f.warnings


def base_loader(source: CppSource) -> tuple[str, Node]:
    for name, node in function_definitions(source.root):
        if name in BASE_LOADERS:
            return name, node
    raise source.missing(
        f"none of {', '.join(BASE_LOADERS)} is defined in {source.path}", " or ".join(BASE_LOADERS)
    )


def helper_definitions(source: CppSource) -> dict[str, Node]:
    return {
        name.split("::")[-1]: node
        for name, node in function_definitions(source.root)
        if name.startswith(f"{HPARAMS_STRUCT}::") and name.split("::")[-1] in HELPERS
    }


def _bare(node: Node | None) -> Node | None:
    """`node` without brackets around it that group nothing (`(il)`; the parse keeps a pair
    next to `<`, which could open a template)."""
    while node is not None and node.type == "parenthesized_expression":
        inner = code_children(node)
        if len(inner) != 1:
            break
        node = inner[0]
    return node
