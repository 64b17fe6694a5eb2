"""Evaluate vLLM's flag functions (`is_hybrid(model)`, `supports_pp(model)`, ...) on a static class.

A tiny interpreter over the functions' own source: `getattr`/`hasattr` walk the class's C3 MRO,
`isinstance(model, P)` on a runtime-checkable Protocol checks that every member of P is present
(as Python does for a class object), helper calls are followed into the tree, and
`supports_kw(method, kw)` reads the method's parameters. Whatever it cannot evaluate is
`Unknown(reason)`, never a silent False."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from apron.extractors.parsing.python_ts import if_clauses, node_text, string_value, unparenthesize
from apron.extractors.vllm.class_tree import (
    BUILTIN_CLASSES,
    NON_LITERAL,
    ClassInfo,
    ClassTree,
    Method,
    Module,
    Unresolved,
    c3_mro,
    external_class,
)
from apron.extractors.vllm.flag_replay import POISON, ReadTrie

# Names Python leaves out of a Protocol's members (typing._SPECIAL_NAMES and friends).
PROTOCOL_EXCLUDED = frozenset(
    {
        "__abstractmethods__",
        "__annotations__",
        "__dict__",
        "__doc__",
        "__init__",
        "__module__",
        "__new__",
        "__slots__",
        "__subclasshook__",
        "__weakref__",
        "__class_getitem__",
        "__match_args__",
        "__parameters__",
        "__orig_bases__",
        "__protocol_attrs__",
        "__non_callable_proto_members__",
        "__type_params__",
    }
)
SIGNATURE_CHECK = "supports_kw"  # vllm.utils: does a callable accept this keyword
MAX_DEPTH = 30


@dataclass(frozen=True)
class Unknown:
    """A value the static evaluation cannot know, and why."""

    reason: str

    def __bool__(self) -> bool:  # pragma: no cover - a bug guard
        raise TypeError("Unknown has no truth value")


@dataclass(frozen=True)
class ClassValue:
    info: ClassInfo


@dataclass(frozen=True)
class MethodValue:
    method: Method


PRESENT = object()  # an attribute that exists with a value that is not a literal
MISSING = object()  # no class of the MRO defines the attribute


CONSTANTS = {"true": True, "false": False, "none": None}
Compiled = Callable[[Module, dict, int], Any]


def _nothing(mod: Module, env: dict, depth: int) -> None:
    """A statement that changes no value (a logging call, an assert, `pass`)."""


class _Return(Exception):
    def __init__(self, value: object) -> None:
        self.value = value


def lookup(cls: ClassInfo, attribute: str) -> object | None:
    """What `getattr(cls, attribute)` finds along the MRO: a value, PRESENT, a MethodValue,
    an Unknown (an unresolvable class came first), or MISSING when no class defines it."""
    if attribute == "__name__":
        return cls.name
    if attribute in cls.lookup_cache:
        return cls.lookup_cache[attribute]
    try:
        mro = c3_mro(cls)
    except Unresolved as err:
        return Unknown(err.reason)
    found = _lookup_in(mro, attribute)
    if cls.mro_cache is not None:  # the hierarchy is complete: the answer no longer changes
        cls.lookup_cache[attribute] = found
    return found


def _lookup_in(mro: tuple[ClassInfo, ...], attribute: str) -> object | None:
    for entry in mro:
        if entry.opaque_reason:
            return Unknown(f"base {entry.qualname} is not resolvable: {entry.opaque_reason}")
        if entry.external:
            continue
        attributes = entry.attributes  # `entry.own(attribute)`, inline: this is the hot loop
        if attribute in attributes:
            own = attributes[attribute]
            return PRESENT if own is NON_LITERAL else own.value
        method = entry.methods.get(attribute)
        if method is not None:
            return MethodValue(method)
    return MISSING


def protocol_members(protocol: ClassInfo) -> set[str]:
    """The attribute and method names a runtime-checkable Protocol requires."""
    members: set[str] = set()
    for entry in c3_mro(protocol):
        if entry.external or not entry.is_protocol:
            continue
        members |= set(entry.attributes) | entry.annotations | set(entry.methods)
    return {m for m in members if m not in PROTOCOL_EXCLUDED and not m.startswith("_abc_")}


def protocol_methods(protocol: ClassInfo) -> set[str]:
    """The members of a Protocol that are methods (a None value for them fails the check)."""
    found: set[str] = set()
    for entry in c3_mro(protocol):
        if not entry.external and entry.is_protocol:
            found |= set(entry.methods)
    return found


def _truth(value: object) -> bool | Unknown:
    if isinstance(value, Unknown):
        return value
    if value is PRESENT:
        return Unknown("an attribute's value is not a literal")
    if isinstance(value, (ClassValue, MethodValue)):
        return True
    return bool(value)


class FlagEvaluator:
    """Evaluates expressions of one tree's functions against static classes."""

    def __init__(self, tree: ClassTree) -> None:
        self.tree = tree
        self._memo: dict[tuple, object] = {}  # (module, definition node id, *argument keys)
        # node id -> compiled closures: the same functions run for every class
        self._expressions: dict[int, Compiled] = {}
        self._blocks: dict[int, list[Compiled]] = {}
        self._functions: dict[int, tuple[list[str], Node]] = {}  # params, body
        self._globals: dict[tuple[str, str], ClassValue] = {}  # (module, name) -> its class
        self._protocols: dict[int, tuple[ClassInfo, tuple]] = {}  # id -> (protocol, members)
        # what calls read of classes (flag_replay): (class, read, answer) in order, every call's
        # reads a slice of it; the classes of the calls under way; each found method's origin
        self._log: list[tuple] = []
        self._tracing: list[ClassInfo] = []
        self._origins: dict[int, tuple[MethodValue, ClassInfo, str]] = {}
        self._tries: dict[tuple, ReadTrie] = {}  # (module, definition node id, depth) -> trie
        self.tree.adapter_guard = self._adapter_guard

    def _adapter_guard(self, mod: Module, statement: Node, param: str, argument: ClassInfo) -> bool:
        """`if is_pooling_model(cls): return cls` in an adapter: True when the guard returns."""
        consequence = statement.child_by_field_name("consequence")
        returns = [s for s in consequence.named_children if s.type == "return_statement"]
        if not returns or node_text(returns[0].named_children[0]) != param:
            return False
        value = self.expression(
            mod, statement.child_by_field_name("condition"), {param: ClassValue(argument)}, 0
        )
        truth = _truth(value)
        return truth is True

    # ------------------------------------------------------------ calls

    def call_function(
        self, mod: Module, definition: Node, args: list[object], depth: int
    ) -> object:
        if depth > MAX_DEPTH:
            return Unknown("flag functions nest deeper than 30 calls")
        # a definition read from its own span starts at byte 0: the node, not its offset, is key
        identity = definition.id
        key = (mod.name, identity, *map(_key, args))
        memo = self._memo.get(key)
        if memo is not None:
            result, reads = memo
            if reads:
                self._log.extend(reads)  # what it read, the calls under way read too
            return result
        trie = None
        if len(args) == 1 and type(args[0]) is ClassValue and not self.tree.resolving:
            info = args[0].info
            trie_key = (mod.name, identity, depth)
            trie = self._tries.get(trie_key)
            if trie is None:
                trie = self._tries[trie_key] = ReadTrie()
            # only where every call under way is on the same class: a read of another class
            # would be one of theirs
            if all(c is info for c in self._tracing):
                found = trie.replay(info, self._perform)
                if found is not None:
                    result, reads = found
                    self._log.extend(reads)
                    self._memo[key] = (result, tuple(reads))
                    return result
            self._tracing.append(info)
        start = len(self._log)
        try:
            shape = self._functions.get(identity)
            if shape is None:
                shape = self._functions[identity] = self._compile_function(definition)
            params, run = shape
            result = run(mod, dict(zip(params, args, strict=False)), depth + 1)
        finally:
            if trie is not None:
                self._tracing.pop()
        reads = tuple(self._log[start:])
        if trie is not None and not _holds_class_or_method(result):
            trie.record(args[0].info, reads, result)
        self._memo[key] = (result, reads)
        return result

    # ------------------------------------------------------------ reads of classes

    def _lookup(self, info: ClassInfo, attribute: str) -> object:
        """`lookup`, logged; a method found is remembered with where it came from."""
        found = lookup(info, attribute)
        self._log.append((info, ("get", attribute), _answer(found)))
        if type(found) is MethodValue:
            self._origins[id(found)] = (found, info, attribute)
        return found

    def _perform(self, info: ClassInfo, read: tuple) -> object:
        """The answer `info` gives to a logged read (as the evaluation logs it)."""
        if read[0] == "get":
            return _answer(lookup(info, read[1]))
        if read[0] == "dunder":
            return any(c.external for c in c3_mro(info))
        found = lookup(info, read[1])  # "accepts"
        return found.method.accepts(read[2]) if type(found) is MethodValue else ("no method",)

    def _compile_function(self, definition: Node) -> tuple[list[str], Compiled]:
        """(parameters, the body as a closure returning the function's value); a body whose only
        statement with an effect is its `return` evaluates that value without raising."""
        body = definition.child_by_field_name("body")
        effective = [s for s in self._compiled_block(body) if s is not _nothing]
        if len(effective) == 1 and hasattr(effective[0], "returned"):
            return _params(definition), effective[0].returned or _nothing
        block = self.block

        def run(mod: Module, env: dict, depth: int) -> object:
            try:
                block(mod, body, env, depth)
            except _Return as returned:
                return returned.value
            return None

        return _params(definition), run

    # ------------------------------------------------------------ statements
    # Each block and expression is compiled once into Python closures over its nodes (the same
    # flag functions run for every class); a closure runs exactly what the tree-walking
    # evaluation did, in the same order, with the same Unknown reasons.

    def block(self, mod: Module, block: Node, env: dict, depth: int) -> None:
        for statement in self._compiled_block(block):
            statement(mod, env, depth)

    def _compiled_block(self, block: Node) -> list[Compiled]:
        compiled = self._blocks.get(block.id)
        if compiled is None:
            compiled = self._blocks[block.id] = [
                self._compile_statement(s) for s in block.named_children
            ]
        return compiled

    def _compile_statement(self, statement: Node) -> Compiled:
        kind = statement.type
        if kind == "return_statement":
            value = (
                self.compiled(statement.named_children[0]) if statement.named_child_count else None
            )

            def returns(mod: Module, env: dict, depth: int) -> None:
                raise _Return(value(mod, env, depth) if value is not None else None)

            returns.returned = value  # the value closure (None for a bare `return`)
            return returns
        if kind == "if_statement":
            return self._compile_if(statement)
        if kind == "expression_statement" and statement.named_child_count == 1:
            inner = statement.named_children[0]
            if inner.type == "assignment":
                left = inner.child_by_field_name("left")
                right = inner.child_by_field_name("right")
                if left is not None and left.type == "identifier" and right is not None:
                    name = node_text(left)
                    value = self.compiled(right)

                    def assigns(mod: Module, env: dict, depth: int) -> None:
                        env[name] = value(mod, env, depth)

                    return assigns
                return _nothing
            if inner.type == "call":
                method_call = self._method_call_statement
                return lambda mod, env, depth: method_call(mod, inner, env, depth)
            return _nothing
        if kind == "for_statement":
            loop = self._for
            return lambda mod, env, depth: loop(mod, statement, env, depth)
        if kind in ("assert_statement", "pass_statement", "comment"):
            return _nothing
        if _returns(statement):
            unknown = Unknown(f"a `{kind}` with a return is not evaluated")

            def not_evaluated(mod: Module, env: dict, depth: int) -> None:
                raise _Return(unknown)

            return not_evaluated
        return _nothing

    def _compile_if(self, statement: Node) -> Compiled:
        found, otherwise = if_clauses(statement)
        clauses = [(self.compiled(condition), body) for condition, body in found]
        returns = _returns(statement)
        block = self.block

        def branch(mod: Module, env: dict, depth: int) -> None:
            for condition, body in clauses:
                truth = _truth(condition(mod, env, depth))
                if isinstance(truth, Unknown):
                    if returns:
                        raise _Return(truth)
                    for name in _mutated_names(statement):  # a block that only logs changes nothing
                        env[name] = truth
                    return
                if truth:
                    block(mod, body, env, depth)
                    return
            if otherwise is not None:
                block(mod, otherwise, env, depth)

        return branch

    def _for(self, mod: Module, statement: Node, env: dict, depth: int) -> None:
        left = statement.child_by_field_name("left")
        iterable = self.expression(mod, statement.child_by_field_name("right"), env, depth)
        if isinstance(iterable, Unknown):
            raise _Return(iterable)
        if left is None or left.type != "identifier" or not isinstance(iterable, (list, tuple)):
            raise _Return(Unknown("a `for` loop over a computed value is not evaluated"))
        for item in iterable:
            env[node_text(left)] = item
            self.block(mod, statement.child_by_field_name("body"), env, depth)

    def _method_call_statement(self, mod: Module, call: Node, env: dict, depth: int) -> None:
        function = call.child_by_field_name("function")
        if function.type == "attribute":
            target = node_text(function.child_by_field_name("object"))
            method = node_text(function.child_by_field_name("attribute"))
            if target in env and isinstance(env[target], set) and method == "add":
                value = self.expression(
                    mod, call.child_by_field_name("arguments").named_children[0], env, depth
                )
                if isinstance(value, Unknown):
                    env[target] = value
                else:
                    env[target].add(value)
        # any other call statement (logging) has no effect on the value

    # ------------------------------------------------------------ expressions

    def expression(self, mod: Module, node: Node, env: dict, depth: int) -> object:
        return self.compiled(node)(mod, env, depth)

    def compiled(self, node: Node) -> Compiled:
        """The closure that evaluates `node`; a compound's closure calls its operands' directly."""
        compiled = self._expressions.get(node.id)
        if compiled is None:
            compiled = self._expressions[node.id] = self._compile(unparenthesize(node))
        return compiled

    def _compile(self, node: Node) -> Compiled:
        kind = node.type
        compiled = self.compiled
        if kind == "identifier":
            word = node_text(node)
            find = self._global

            def identifier(mod: Module, env: dict, depth: int) -> object:
                return env[word] if word in env else find(mod, word)

            return identifier
        if kind in CONSTANTS:
            value = CONSTANTS[kind]
            return lambda mod, env, depth: value
        if kind == "integer":
            digits = node_text(node)
            return lambda mod, env, depth: int(digits, 0)
        if kind in ("string", "concatenated_string"):
            text = string_value(node)
            string = text if text is not None else Unknown("an f-string")
            return lambda mod, env, depth: string
        if kind in ("tuple", "list", "set"):
            items = [compiled(c) for c in node.named_children if c.type != "comment"]
            make = tuple if kind == "tuple" else list if kind == "list" else set
            return lambda mod, env, depth: make([item(mod, env, depth) for item in items])
        if kind == "not_operator":
            argument = compiled(node.child_by_field_name("argument"))

            def negation(mod: Module, env: dict, depth: int) -> object:
                truth = _truth(argument(mod, env, depth))
                return truth if isinstance(truth, Unknown) else not truth

            return negation
        if kind == "boolean_operator":
            return self._compile_boolean(node)
        if kind == "comparison_operator":
            return self._compile_comparison(node)
        if kind == "conditional_expression":
            body, condition, otherwise = (compiled(c) for c in node.named_children)

            def conditional(mod: Module, env: dict, depth: int) -> object:
                truth = _truth(condition(mod, env, depth))
                if isinstance(truth, Unknown):
                    return truth
                return (body if truth else otherwise)(mod, env, depth)

            return conditional
        if kind == "attribute":
            target = compiled(node.child_by_field_name("object"))
            attribute = node_text(node.child_by_field_name("attribute"))
            missing = Unknown(f"no class defines {attribute}")
            get = self._getattr
            return lambda mod, env, depth: get(target(mod, env, depth), attribute, missing)
        if kind == "subscript":
            return self._compile_subscript(node)
        if kind == "call":
            return self._compile_call(node)
        if kind == "generator_expression":
            generator = self._generator
            return lambda mod, env, depth: generator(mod, node, env, depth)
        unknown = Unknown(f"`{node_text(node)[:40]}` ({kind}) is not evaluated")
        return lambda mod, env, depth: unknown

    def _global(self, mod: Module, word: str) -> object:
        """The class a module-level name denotes; a class found while the tree resolves nothing
        else is kept (the same class object every time), an Unresolved never is."""
        settled = not self.tree.resolving
        if settled:
            found = self._globals.get((mod.name, word))
            if found is not None:
                return found
        if word in BUILTIN_CLASSES:
            found = ClassValue(external_class(f"builtins.{word}"))
        else:
            try:
                found = ClassValue(self.tree.resolve(mod.name, word))
            except Unresolved as err:
                return Unknown(err.reason)
        if settled:
            self._globals[(mod.name, word)] = found
        return found

    def _compile_boolean(self, node: Node) -> Compiled:
        operator = node.child_by_field_name("operator").type
        left_node = self.compiled(node.child_by_field_name("left"))
        right_node = self.compiled(node.child_by_field_name("right"))

        def boolean(mod: Module, env: dict, depth: int) -> object:
            left = left_node(mod, env, depth)
            truth = _truth(left)
            if operator == "and":
                if truth is False:
                    return left
                right = right_node(mod, env, depth)
                if isinstance(truth, Unknown):
                    return right if _truth(right) is False else truth
                return right
            if truth is True:
                return left
            right = right_node(mod, env, depth)
            if isinstance(truth, Unknown):
                return right if _truth(right) is True else truth
            return right

        return boolean

    def _compile_comparison(self, node: Node) -> Compiled:
        operands = node.named_children
        operators = [c.type for c in node.children if not c.is_named]
        unknown = Unknown(f"`{node_text(node)[:40]}` is not evaluated")
        if len(operands) != 2 or len(operators) != 1:
            return lambda mod, env, depth: unknown
        first, second = (self.compiled(o) for o in operands)
        operator = operators[0]
        log = self._log

        def comparison(mod: Module, env: dict, depth: int) -> object:
            left = first(mod, env, depth)
            right = second(mod, env, depth)
            if _holds_class_or_method(left) or _holds_class_or_method(right):
                log.append((None, POISON, None))  # identities: not a logged read
            for value in (left, right):
                if isinstance(value, Unknown):
                    return value
                if value is PRESENT:
                    return Unknown("an attribute's value is not a literal")
            try:
                if operator == "==":
                    return left == right
                if operator == "!=":
                    return left != right
                if operator == "<":
                    return left < right
                if operator == ">":
                    return left > right
                if operator == "in":
                    return left in right
                if operator == "is":
                    return left is right
            except TypeError:
                pass
            return unknown

        return comparison

    def _compile_subscript(self, node: Node) -> Compiled:
        value_node = self.compiled(node.child_by_field_name("value"))
        index_node = self.compiled(node.child_by_field_name("subscript"))
        unknown = Unknown(f"`{node_text(node)[:40]}` is not evaluated")

        def subscript(mod: Module, env: dict, depth: int) -> object:
            value = value_node(mod, env, depth)
            index = index_node(mod, env, depth)
            if isinstance(value, Unknown):
                return value
            if (
                isinstance(index, int)
                and isinstance(value, (list, tuple))
                and -len(value) <= index < len(value)
            ):
                return value[index]
            return unknown

        return subscript

    def _getattr(self, target: object, attribute: str, missing: object) -> object:
        if isinstance(target, Unknown):
            return target
        if isinstance(target, ClassValue):
            if attribute == "__mro__":
                self._log.append((None, POISON, None))
                try:
                    return tuple(ClassValue(c) for c in c3_mro(target.info))
                except Unresolved as err:
                    return Unknown(err.reason)
            found = self._lookup(target.info, attribute)
            if found is MISSING:
                if attribute.startswith("__"):
                    external = any(c.external for c in c3_mro(target.info))
                    self._log.append((target.info, ("dunder", attribute), external))
                    if external:
                        return Unknown(f"{attribute} comes from a class outside the tree")
                return missing
            return found
        return Unknown(f"attribute {attribute} of a non-class value")

    def _compile_call(self, node: Node) -> Compiled:
        function = node.child_by_field_name("function")
        argument_list = node.child_by_field_name("arguments")
        if argument_list.type == "generator_expression":
            arguments = [argument_list]
        else:
            arguments = [a for a in argument_list.named_children if a.type != "comment"]
        name = node_text(function)
        not_evaluated = Unknown(f"call `{name[:40]}` is not evaluated")
        if function.type != "identifier":
            return lambda mod, env, depth: not_evaluated
        builtin = getattr(self, f"_builtin_{name}", None)
        if builtin is not None:
            evaluators = [self.compiled(a) for a in arguments]
            return lambda mod, env, depth: (
                not_evaluated if name in env else builtin(evaluators, mod, env, depth)
            )
        positional = [self.compiled(a) for a in arguments if a.type != "keyword_argument"]
        tree = self.tree
        functions: dict[str, object] = {}  # module -> what the callee names there

        def call(mod: Module, env: dict, depth: int) -> object:
            if name in env:
                return not_evaluated
            found = functions.get(mod.name, functions)
            if found is functions:
                found = functions[mod.name] = tree.function(mod, function)
            if found is None:
                return Unknown(f"`{name}` is not a function of the tree")
            target, definition = found
            args = [argument(mod, env, depth) for argument in positional]
            return self.call_function(target, definition, args, depth)

        return call

    def _generator(self, mod: Module, node: Node, env: dict, depth: int) -> object:
        body = node.named_children[0]
        clauses = [c for c in node.named_children[1:] if c.type in ("for_in_clause", "if_clause")]
        if not clauses or clauses[0].type != "for_in_clause" or len(clauses) > 2:
            return Unknown("a generator expression is not evaluated")
        left = clauses[0].child_by_field_name("left")
        iterable = self.expression(mod, clauses[0].child_by_field_name("right"), env, depth)
        if isinstance(iterable, Unknown) or left is None or left.type != "identifier":
            return iterable if isinstance(iterable, Unknown) else Unknown("a generator expression")
        out = []
        for item in iterable:
            inner = {**env, node_text(left): item}
            if len(clauses) == 2:
                truth = _truth(self.expression(mod, clauses[1].named_children[0], inner, depth))
                if isinstance(truth, Unknown):
                    return truth
                if not truth:
                    continue
            out.append(self.expression(mod, body, inner, depth))
        return out

    # ------------------------------------------------------------ builtins

    @staticmethod
    def _args(arguments: list[Compiled], mod, env, depth) -> list[object]:
        return [argument(mod, env, depth) for argument in arguments]

    def _builtin_getattr(self, arguments, mod, env, depth):
        values = self._args(arguments, mod, env, depth)
        if len(values) < 2 or not isinstance(values[1], str):
            return Unknown("getattr with a computed name")
        default = values[2] if len(values) > 2 else Unknown(f"no class defines {values[1]}")
        return self._getattr(values[0], values[1], missing=default)

    def _builtin_hasattr(self, arguments, mod, env, depth):
        values = self._args(arguments, mod, env, depth)
        if len(values) != 2 or not isinstance(values[1], str):
            return Unknown("hasattr with a computed name")
        found = self._getattr(values[0], values[1], missing=MISSING)
        if isinstance(found, Unknown):
            return found
        return found is not MISSING or values[1] in ("__init__", "__name__", "__mro__")

    def _builtin_callable(self, arguments, mod, env, depth):
        (value,) = self._args(arguments, mod, env, depth)
        if isinstance(value, Unknown):
            return value
        if value is PRESENT:
            return Unknown("callable() of a non-literal attribute")
        return isinstance(value, (MethodValue, ClassValue))

    def _builtin_isinstance(self, arguments, mod, env, depth):
        value, kind = self._args(arguments, mod, env, depth)
        if isinstance(value, Unknown):
            return value
        if not isinstance(kind, ClassValue):
            return kind if isinstance(kind, Unknown) else Unknown("isinstance with a computed type")
        if any(kind.info is c for c in self._tracing):
            self._log.append((None, POISON, None))  # a call's class as the type
        if kind.info.external and kind.info.name == "type":
            return isinstance(value, ClassValue)
        if not isinstance(value, ClassValue):
            return Unknown("isinstance of a non-class value")
        if not kind.info.is_protocol:
            return Unknown(f"isinstance(class, {kind.info.name}) of a class that is not a Protocol")
        members, methods = self._protocol(kind.info)
        for member in members:
            found = self._lookup(value.info, member)
            if isinstance(found, Unknown):
                return found
            if found is MISSING or (found is None and member in methods):
                return False  # as Python: absent, or a method member set to None
        return True

    def _protocol(self, protocol: ClassInfo) -> tuple[tuple[str, ...], set[str]]:
        """(sorted members, method members) of a Protocol; kept once its hierarchy is complete."""
        found = self._protocols.get(id(protocol))
        if found is not None and found[0] is protocol:
            return found[1]
        shape = (tuple(sorted(protocol_members(protocol))), protocol_methods(protocol))
        if protocol.mro_cache is not None:
            self._protocols[id(protocol)] = (protocol, shape)
        return shape

    def _builtin_issubclass(self, arguments, mod, env, depth):
        value, kind = self._args(arguments, mod, env, depth)
        self._log.append((None, POISON, None))
        if isinstance(value, Unknown) or isinstance(kind, Unknown):
            return value if isinstance(value, Unknown) else kind
        if not isinstance(value, ClassValue) or not isinstance(kind, ClassValue):
            return Unknown("issubclass of non-class values")
        return any(c.qualname == kind.info.qualname for c in c3_mro(value.info))

    def _builtin_len(self, arguments, mod, env, depth):
        (value,) = self._args(arguments, mod, env, depth)
        return value if isinstance(value, Unknown) else len(value)

    def _builtin_tuple(self, arguments, mod, env, depth):
        (value,) = self._args(arguments, mod, env, depth)
        return value if isinstance(value, Unknown) else tuple(value)

    def _builtin_list(self, arguments, mod, env, depth):
        (value,) = self._args(arguments, mod, env, depth)
        return value if isinstance(value, Unknown) else sorted(value, key=repr)

    def _builtin_set(self, arguments, mod, env, depth):
        if not arguments:
            return set()
        (value,) = self._args(arguments, mod, env, depth)
        return value if isinstance(value, Unknown) else set(value)

    def _builtin_supports_kw(self, arguments, mod, env, depth):
        values = self._args(arguments[:2], mod, env, depth)
        method, keyword = values
        if isinstance(method, Unknown):
            return method
        if not isinstance(method, MethodValue) or not isinstance(keyword, str):
            return Unknown(f"{SIGNATURE_CHECK} of a value that is not a method")
        accepts = method.method.accepts(keyword)
        origin = self._origins.get(id(method))
        if origin is not None and origin[0] is method:
            self._log.append((origin[1], ("accepts", origin[2], keyword), accepts))
        else:
            self._log.append((None, POISON, None))  # a method not found by a logged read
        return accepts


def _answer(found: object) -> object:
    """A logged read's answer, hashable, equal exactly when the evaluation goes the same way:
    a method is only a method (what is read of it is logged as `accepts`)."""
    if type(found) is MethodValue:
        return ("method",)
    if found is PRESENT:
        return ("present",)
    if found is MISSING:
        return ("missing",)
    if type(found) is Unknown:
        return found
    return (type(found), found)


def _holds_class_or_method(value: object) -> bool:
    if type(value) in (ClassValue, MethodValue):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_class_or_method(item) for item in value)
    return False


def _key(value: object) -> str:
    """A class by its qualified name, any other value by its repr (a set's or list's included)."""
    return value.info.qualname if type(value) is ClassValue else repr(value)


def _params(definition: Node) -> list[str]:
    names = []
    parameters = definition.child_by_field_name("parameters")
    for param in parameters.named_children if parameters is not None else ():
        if param.type == "identifier":
            names.append(node_text(param))
        elif param.type == "typed_parameter" and param.named_children[0].type == "identifier":
            names.append(node_text(param.named_children[0]))
        elif param.type in ("default_parameter", "typed_default_parameter"):
            names.append(node_text(param.child_by_field_name("name")))
    return names


def _returns(node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "return_statement":
            return True
        if current.type in ("function_definition", "class_definition", "lambda"):
            if current is not node:
                continue
        stack.extend(current.named_children)
    return False


def _mutated_names(node: Node) -> set[str]:
    """Names a block assigns or calls `.add` on: what an unknown branch leaves unknown."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "assignment":
            left = current.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                names.add(node_text(left))
        elif current.type == "call":
            function = current.child_by_field_name("function")
            if (
                function.type == "attribute"
                and node_text(function.child_by_field_name("attribute")) == "add"
            ):
                names.add(node_text(function.child_by_field_name("object")))
        stack.extend(current.named_children)
    return names
