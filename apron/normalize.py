"""Fields the engine sees that config.json leaves out: the defaults and derived fields of the
configuration class the engine builds the config with, read from the extracted tables in
generated/transformers/ (transformers' classes at the pinned release, and vLLM's own classes,
which replace them for the model_types vLLM registers).

transformers is not imported (one configuration module costs about a second to import). The
class's defaults fill what config.json leaves out, then its `__post_init__` / `__init__`
derivations run in order, each an expression of the one rule language evaluated by
apron/expressions.py (`self.x` resolved against the config as the class builds it, `kwargs` against
config.json); a field whose default or derivation was not read stays absent. A published field
always wins over a derived one.

The tables come from the constraint set the caller gives (ConstraintSet.config_classes()): no
generated module is imported here.

Left by hand (HAND_RULES) are readings of vLLM's model code, not of a configuration class; each
names its file. A model_type without a class gets no derived fields, and the plan says so."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from apron import expressions
from apron.errors import ConstraintsError
from apron.expressions import Converter, Raises, Unknown, absent, infix
from apron.record import Record
from apron.terminal import shown


class Derived(Record):
    """One field the engine reads that config.json does not hold, and where its value comes from."""

    name: str
    value: Any
    source: str


Getter = Callable[[str], Any]
Rule = Callable[[Getter], list[Derived]]


class _Unknown:
    """A value the static reading could not establish."""

    def __repr__(self) -> str:
        return "unknown"


UNKNOWN = _Unknown()
MAX_LIST = expressions.MAX_LIST  # a derived per-layer list longer than this is not built
SCHEMA_VERSION = 2  # the generated tables' rule encoding this module reads


class ConfigClass(Record):
    """One configuration class as extracted: where it is, what it declares."""

    name: str
    model_type: str | None
    path: str
    origin: str  # "transformers 5.5.3" or "vLLM <commit>"
    bases: tuple[str, ...]
    defaults: dict[str, tuple[Any, bool]]
    attribute_map: dict[str, str]  # attribute read -> field stored
    sub_configs: dict[str, str]
    derivations: tuple[tuple[str, Any, Any], ...]  # (field, condition, value): expressions
    validators: tuple[tuple[str, Any, str, str], ...] = ()  # (method, condition, error, message)
    strict: bool = False  # huggingface_hub @strict: field values are checked against field_types
    field_types: dict[str, tuple] | None = None  # field -> annotation tree (FIELD_TYPE_OPS)


# -- the extracted tables -----------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A generated literal back as the value a config holds (tuples were lists, tagged dicts)."""
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "dict" and isinstance(value[1], tuple):
            return {k: _plain(v) for k, v in value[1]}
        return [_plain(v) for v in value]
    return value


class _Tables(Record):
    classes: Mapping[str, ConfigClass]  # class name -> the class, built on first use
    registry: dict[str, str]
    by_model_type: dict[str, str]


# the tables with one row per class and item, the class name first: a plan reads a few classes
# of hundreds, so each class is built from its rows when first read (_ClassMap)
PER_CLASS_TABLES = (
    "DEFAULTS",
    "ATTRIBUTE_MAP",
    "SUB_CONFIGS",
    "DERIVATIONS",
    "VALIDATORS",
    "FIELD_TYPES",
    "STRICT_CLASSES",
)
REQUIRED_TABLES = ("CLASSES", "DEFAULTS", "ATTRIBUTE_MAP", "SUB_CONFIGS", "DERIVATIONS")


def rows_by_class(names: Mapping[str, Any], where: str) -> dict[str, dict[str, tuple]]:
    """class name -> table -> that class's rows of the per-class tables, in the module's order
    (`where` names the module in an error)."""
    _require(names, REQUIRED_TABLES[1:], where)
    grouped: dict[str, dict[str, list]] = {}
    for table in PER_CLASS_TABLES:
        for row in names.get(table, ()):
            grouped.setdefault(row[0], {}).setdefault(table, []).append(row)
    return {cls: {t: tuple(rows) for t, rows in tables.items()} for cls, tables in grouped.items()}


def _config_class(
    name: str, declared: tuple, rows: Mapping[str, tuple], origin: str
) -> ConfigClass:
    """One class from its CLASSES row (model_type, path, bases) and its rows of each table."""
    model_type, path, bases = declared
    derivations = sorted(rows.get("DERIVATIONS", ()), key=lambda row: row[1])  # by step
    validators = sorted(rows.get("VALIDATORS", ()), key=lambda row: row[2])  # by step
    return ConfigClass(
        name=name,
        model_type=model_type,
        path=path,
        origin=origin,
        bases=tuple(bases),
        defaults={
            field: (_plain(value) if known else UNKNOWN, known)
            for _, field, value, known in rows.get("DEFAULTS", ())
        },
        attribute_map={alias: stored for _, alias, stored in rows.get("ATTRIBUTE_MAP", ())},
        sub_configs={key: sub for _, key, sub in rows.get("SUB_CONFIGS", ())},
        derivations=tuple(
            (field, condition, value) for _, _, field, condition, value in derivations
        ),
        validators=tuple(
            (method, condition, error, message)
            for _, method, _, condition, error, message in validators
        ),
        strict=bool(rows.get("STRICT_CLASSES")),
        field_types={field: tree for _, field, tree in rows.get("FIELD_TYPES", ())},
    )


class _ClassMap(Mapping[str, ConfigClass]):
    """Class name -> ConfigClass of one module, each built from its rows on first read."""

    def __init__(
        self,
        declared: dict[str, tuple],
        by_class: Mapping[str, Mapping[str, tuple]],
        origin: str,
    ) -> None:
        self._declared = declared  # name -> (model_type, path, bases), the first by path
        self._by_class = by_class
        self._origin = origin
        self._built: dict[str, ConfigClass] = {}

    def __getitem__(self, name: str) -> ConfigClass:
        found = self._built.get(name)
        if found is None:
            rows = self._by_class.get(name, {})
            found = _config_class(name, self._declared[name], rows, self._origin)
            self._built[name] = found
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)


def tables_of(
    names: Mapping[str, Any],
    by_class: Mapping[str, Mapping[str, tuple]],
    origin: str,
    where: str,
) -> _Tables:
    """The tables of one generated module: its names (CLASSES, REGISTRY, SCHEMA_VERSION, ...)
    and its per-class rows (rows_by_class); `where` names the module in an error."""
    _check_version(names, where)
    _require(names, REQUIRED_TABLES[:1], where)
    declared: dict[str, tuple] = {}
    by_model_type: dict[str, str] = {}
    for name, model_type, path, bases in sorted(names["CLASSES"], key=lambda c: c[2]):
        if name in declared:
            continue
        declared[name] = (model_type, path, bases)
        if model_type is not None:
            by_model_type.setdefault(model_type, name)
    classes = _ClassMap(declared, by_class, origin)
    return _Tables(classes, dict(names.get("REGISTRY", ())), by_model_type)


def _check_version(names: Mapping[str, Any], where: str) -> None:
    version = names.get("SCHEMA_VERSION", 1)
    if version != SCHEMA_VERSION:
        raise ConstraintsError(
            f"{where}: SCHEMA_VERSION is {version!r}; apron reads {SCHEMA_VERSION} (rules as "
            "expressions of apron/expressions.py): re-extract with python -m "
            "apron.extractors.transformers"
        )


def _require(names: Mapping[str, Any], tables: tuple[str, ...], where: str) -> None:
    missing = [table for table in tables if table not in names]
    if missing:
        raise ConstraintsError(f"{where}: {', '.join(missing)} missing")


def _named(names: Mapping[str, Any], name: str, where: str) -> str:
    """A module's name that says where its classes come from (RELEASE, COMMIT)."""
    if not isinstance(names.get(name), str):
        raise ConstraintsError(f"{where}: {name} is missing")
    return names[name]


def _tables(module: Any, origin: str) -> _Tables:
    """The tables of one generated module object."""
    names = vars(module)
    where = names.get("__file__") or names.get("__name__", "a generated module")
    _check_version(names, where)
    return tables_of(names, rows_by_class(names, where), origin, where)


class ConfigClasses:
    """The configuration classes an engine builds configs with, from one constraint set:
    transformers' tables and vLLM's (which replace them for the model_types vLLM registers), and
    vLLM's KV-head alias keys, which are never filled in from a default (`_withheld`)."""

    def __init__(self, transformers: _Tables, vllm: _Tables, kv_head_keys: frozenset[str]) -> None:
        self.transformers = transformers
        self.vllm = vllm
        self.kv_head_keys = kv_head_keys

    @classmethod
    def from_modules(
        cls, transformers_module: Any, vllm_module: Any, kv_head_keys: frozenset[str]
    ) -> ConfigClasses:
        """From the two generated modules (generated/transformers/config_classes.py and
        vllm_config_classes.py, as apron.constraints loads them)."""
        return cls(
            _tables(transformers_module, f"transformers {transformers_module.RELEASE}"),
            _tables(vllm_module, f"vLLM {vllm_module.COMMIT[:12]}"),
            kv_head_keys,
        )

    @classmethod
    def from_indexes(
        cls,
        indexes: tuple[tuple[str, Mapping[str, Any], Mapping[str, Mapping[str, tuple]]], ...],
        kv_head_keys: frozenset[str],
    ) -> ConfigClasses:
        """From the two modules' (path, names, rows_by_class), as apron.constraints keeps them."""
        (ours, names, by_class), (theirs, vllm_names, vllm_by_class) = indexes
        release = f"transformers {_named(names, 'RELEASE', ours)}"
        commit = f"vLLM {_named(vllm_names, 'COMMIT', theirs)[:12]}"
        return cls(
            tables_of(names, by_class, release, ours),
            tables_of(vllm_names, vllm_by_class, commit, theirs),
            kv_head_keys,
        )

    def class_named(self, name: str) -> ConfigClass | None:
        """vLLM's class of that name, else transformers'."""
        return self.vllm.classes.get(name) or self.transformers.classes.get(name)

    def _near(self, name: str, origin: str) -> ConfigClass | None:
        """The class `name` as a class of `origin` refers to it: from the same source first."""
        for tables in (self.transformers, self.vllm):
            found = tables.classes.get(name)
            if found is not None and found.origin == origin:
                return found
        return self.class_named(name)

    def class_for(self, model_type: str | None) -> ConfigClass | None:
        """The class the engine builds a config of `model_type` with: vLLM's registered class,
        else the class transformers' AutoConfig maps it to, else a class declaring that
        model_type."""
        if not model_type:
            return None
        if model_type in self.vllm.registry:
            return self.class_named(self.vllm.registry[model_type])
        if model_type in self.transformers.registry:
            return self.transformers.classes.get(self.transformers.registry[model_type])
        name = self.vllm.by_model_type.get(model_type) or self.transformers.by_model_type.get(
            model_type
        )
        return self.class_named(name) if name else None

    def class_chain(self, cls: ConfigClass) -> list[ConfigClass]:
        """The class, then its configuration-class bases (depth first, each once)."""
        chain, todo, seen = [], [cls], set()
        while todo:
            current = todo.pop(0)
            if current.name in seen:
                continue
            seen.add(current.name)
            chain.append(current)
            todo += [
                b for b in (self._near(n, current.origin) for n in current.bases) if b is not None
            ]
        return chain

    def text_class(
        self, model_type: str | None, text_key: str | None, top_model_type: str | None
    ) -> ConfigClass | None:
        """The class of the text config: the class the top class builds under `text_key` (its
        sub_configs, or the class its constructor calls), else the class of the text config's
        own model_type, else the top class."""
        top = self.class_for(top_model_type) if top_model_type else None
        if top is not None and text_key is not None:
            for member in self.class_chain(top):
                if text_key in member.sub_configs:
                    built = self._near(member.sub_configs[text_key], member.origin)
                    if built is not None:
                        return built
        cls = self.class_for(model_type) if model_type else None
        return cls if cls is not None else top

    def attribute_map(self, cls: ConfigClass | None) -> dict[str, tuple[str, ...]]:
        """attribute read -> (config.json key,), from the class and its bases (apron.config)."""
        found: dict[str, tuple[str, ...]] = {}
        for member in reversed(self.class_chain(cls)) if cls is not None else ():
            found.update({alias: (stored,) for alias, stored in member.attribute_map.items()})
        return found

    def refusal(self, cls: ConfigClass, published: Mapping[str, Any]) -> str | None:
        """Why the class refuses this config (its validate_* checks), or None."""
        return refusal(self, cls, published)

    def class_fields(self, cls: ConfigClass, published: Mapping[str, Any]) -> dict[str, Derived]:
        """What the class sets that config.json does not publish (or publishes as null): its
        defaults, then each derivation whose condition holds, in order."""
        return class_fields(self, cls, published)

    def derive(
        self,
        model_type: str | None,
        get: Getter,
        published: Mapping[str, Any] | None = None,
        *,
        text_key: str | None = None,
        top_model_type: str | None = None,
    ) -> tuple[dict[str, Derived], str]:
        """Derived fields for one text config, and how it was read (module function derive)."""
        return derive(
            self, model_type, get, published, text_key=text_key, top_model_type=top_model_type
        )


# -- evaluating derivations ---------------------------------------------------------------------


class ClassRaises(Exception):
    """Building the config runs a derivation that raises (a dict lookup of a key it lacks)."""


ALWAYS = ()  # the condition of a derivation that always runs


class _Env:
    """The config as the class sees it: published keys over the class defaults, then what the
    derivations set; the class's expressions read it through a Converter (`self.x` is a field,
    `kwargs` is config.json)."""

    def __init__(
        self, published: Mapping[str, Any], cls: ConfigClass, classes: ConfigClasses
    ) -> None:
        chain = classes.class_chain(cls)
        self.published = published
        self.aliases: dict[str, str] = {}
        self.defaults: dict[str, tuple[Any, bool]] = {}
        for member in reversed(chain):
            self.aliases.update(member.attribute_map)
            self.defaults.update(member.defaults)
        self.set: dict[str, Any] = {}
        self.raised = ""  # what building the config raised ("" when it built)
        self.reads = Converter(hparams=published, attribute=self._attribute)

    def real(self, name: str) -> str:
        return self.aliases.get(name, name)

    def field(self, name: str) -> Any:
        real = self.real(name)
        if real in self.set:
            return self.set[real]
        if real in self.published:
            return self.published[real]
        for alias, stored in self.aliases.items():
            if stored == real and alias in self.published:
                return self.published[alias]
        if real in self.defaults:
            return self.defaults[real][0]
        return UNKNOWN

    def _attribute(self, name: str) -> Any:
        """`self.name` for the class's expressions: field(name), an unknown one unknown only where
        it is used (the common cases first: this runs for every field an expression reads)."""
        real = self.aliases.get(name, name)
        if real in self.set:
            value = self.set[real]
        elif real in self.published:
            return self.published[real]
        else:
            value = self.field(name)
        return absent(f"the field {name}") if value is UNKNOWN else value

    def evaluate(self, expression: Any) -> Any:
        """The expression's value on this config; UNKNOWN where it needs what apron lacks;
        ClassRaises where the class's own code raises."""
        if expression == ALWAYS:
            return True
        try:
            return expressions.evaluate(expression, {}, None, self.reads)
        except Raises as raised:
            raise ClassRaises(shown(str(raised))) from None
        except Unknown:
            return UNKNOWN


_WORDS: dict[int, tuple[Any, str]] = {}  # id -> (the expression, kept alive; its infix words)


def _words(expression: Any) -> str:
    """infix(expression), rendered once per expression object (the tables keep theirs alive)."""
    entry = _WORDS.get(id(expression))
    if entry is None or entry[0] is not expression:
        if len(_WORDS) >= 100_000:  # expressions built on the fly, not the tables' own
            _WORDS.clear()
        entry = _WORDS[id(expression)] = (expression, infix(expression))
    return entry[1]


def _mentions(expression: Any, names: set[str]) -> bool:
    """Whether the expression reads one of the fields `names` (`self.name`)."""
    if not isinstance(expression, tuple) or not expression:
        return False
    if expression[0] == "self":
        return expression[1] in names
    return any(_mentions(part, names) for part in expression[1:])


def _withheld(name: str, derivation: tuple[Any, Any] | None, kv_head_keys: frozenset[str]) -> bool:
    """A KV-head key is not filled in from a class default, nor by a derivation that tests the
    key itself (`num_key_value_heads = num_attention_heads` when it is None): that is the MHA
    fallback, and where config.json names no KV-head key apron answers unknown (DESIGN: never a
    plausible default). A derivation from other fields (GPTBigCode's `1 if multi_query else
    n_head`) fills it."""
    if name not in kv_head_keys:
        return False
    return derivation is None or any(_mentions(part, {name}) for part in derivation)


def _built(
    classes: ConfigClasses, cls: ConfigClass, published: Mapping[str, Any]
) -> tuple[_Env, dict[str, str]]:
    """The config as the class builds it (defaults, then each derivation whose condition holds,
    in order), and where each field it sets came from ("" when apron does not use it)."""
    env = _Env(published, cls, classes)
    keys = classes.kv_head_keys
    where = f"{cls.origin} {cls.name} ({cls.path})"
    sources: dict[str, str] = {}
    env.raised = ""
    for member in classes.class_chain(cls):
        for name, (_value, known) in member.defaults.items():
            usable = known and not _withheld(name, None, keys)
            sources.setdefault(name, f"{where}: class default" if usable else "")
    for member in classes.class_chain(cls):
        for name, condition, expression in member.derivations:
            real = env.real(name)
            try:
                test = env.evaluate(condition)
                if test is UNKNOWN:
                    env.set[real] = UNKNOWN
                elif test:
                    env.set[real] = env.evaluate(expression)
                else:
                    continue
            except ClassRaises as raised:
                env.raised = (
                    f"{member.origin} {member.name} ({member.path}) raises {raised} when it sets "
                    f"{real} = {_words(expression)}"
                )
                return env, sources
            usable = not _withheld(real, (condition, expression), keys)
            sources[real] = f"{where}: {real} = {_words(expression)}" if usable else ""
    return env, sources


SIMPLE_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str}


def type_error(name: str, value: Any, tree: tuple) -> str:
    """What huggingface_hub's strict type_validator says of `value` for a field annotated
    `tree` ("" when it accepts it). Only simple types (int, float, bool, str), None and their
    unions are checked; a container or any other class is not (apron does not model it)."""
    kind = tree[0]
    if kind == "none":
        return "" if value is None else f"Field '{name}' expected None, got {type(value).__name__}"
    if kind == "union":
        errors = [type_error(name, value, member) for member in tree[1:]]
        if any(not e for e in errors):
            return ""
        return f"Field '{name}' with value {value!r} doesn't match any type: {'; '.join(errors)}"
    expected = SIMPLE_TYPES.get(tree[1]) if kind == "type" else None
    if expected is None:
        return ""
    if (expected is int and isinstance(value, bool)) or not isinstance(value, expected):
        return (
            f"Field '{name}' expected {expected.__name__}, got {type(value).__name__} "
            f"(value: {value!r})"
        )
    return ""


def _checked_types(classes: ConfigClasses, cls: ConfigClass) -> dict[str, tuple]:
    """The field annotations @strict checks for this class: those of its nearest @strict class
    (itself or a base) and that class's bases, the most derived annotation winning."""
    chain = classes.class_chain(cls)
    start = next((i for i, member in enumerate(chain) if member.strict), None)
    found: dict[str, tuple] = {}
    for member in reversed(chain[start:] if start is not None else ()):
        found.update(member.field_types or {})
    return found


TYPE_WORDS = {"int": "an integer", "float": "a float", "bool": "a boolean", "str": "a string"}


def type_words(tree: tuple, *, article: bool = False) -> str:
    """An annotation tree as Python-like text ("int | None"), or with `article` as words
    ("an integer or null")."""
    kind = tree[0]
    if kind == "none":
        return "null" if article else "None"
    if kind == "union":
        members = sorted(tree[1:], key=lambda t: t[0] == "none")  # None last, as it is written
        return (" or " if article else " | ").join(type_words(t, article=article) for t in members)
    if kind == "type":
        return TYPE_WORDS.get(tree[1], tree[1]) if article else tree[1]
    if kind == "generic":
        return f"{tree[1]}[{', '.join(type_words(t) for t in tree[2:])}]"
    return "..." if kind == "ellipsis" else str(tree[-1])


def type_refusal(
    classes: ConfigClasses, cls: ConfigClass, published: Mapping[str, Any]
) -> str | None:
    """Why @strict refuses a value config.json gives a field of this class (the first, by
    key), or None: "num_hidden_layers is true, not an integer (...)"."""
    from apron.bounds import what_it_is

    types = _checked_types(classes, cls)
    if not types:
        return None
    aliases = classes.attribute_map(cls)
    for key in sorted(published):
        if published[key] is None:
            # null reads as absent here, as everywhere in apron (huggingface_hub would check
            # None against the annotation too; not modelled)
            continue
        field_name = key if key in types else (aliases.get(key) or ("",))[0]
        tree = types.get(field_name)
        error = type_error(field_name, published[key], tree) if tree is not None else ""
        if error:
            return (
                f"{shown(key)} is {what_it_is(published[key])}, not {type_words(tree, article=True)}"
                f" (transformers' configuration classes declare it {type_words(tree)} and refuse "
                f"any other type: {cls.origin} {cls.name} ({cls.path}) is @strict, so "
                f"huggingface_hub raises StrictDataclassFieldValidationError: {error})"
            )
    return None


def refusal(classes: ConfigClasses, cls: ConfigClass, published: Mapping[str, Any]) -> str | None:
    """Why the class refuses this config (a field value its @strict type check refuses, else
    the first validate_* check whose condition holds on the config as the class builds it), or
    None; a check apron cannot evaluate is not applied."""
    typed = type_refusal(classes, cls, published)
    if typed:
        return typed
    env, _ = _built(classes, cls, published)
    if env.raised:
        return env.raised
    for member in classes.class_chain(cls):
        for method, condition, error, message in member.validators:
            try:
                holds = env.evaluate(condition)
            except ClassRaises as raised:
                return (
                    f"{member.origin} {member.name}.{method} ({member.path}) raises {raised} "
                    f"while it checks {infix(condition)}"
                )
            if holds is not UNKNOWN and holds:
                return (
                    f"{member.origin} {member.name}.{method} ({member.path}) raises {error} when "
                    f"{infix(condition)}: {message}"
                )
    return None


def class_fields(
    classes: ConfigClasses, cls: ConfigClass, published: Mapping[str, Any]
) -> dict[str, Derived]:
    """What the class sets that config.json does not publish (or publishes as null): its
    defaults, then each derivation whose condition holds, in order."""
    env, sources = _built(classes, cls, published)
    found: dict[str, Derived] = {}
    for name, source in sources.items():
        if published.get(name) is not None or any(
            published.get(a) is not None for a, s in env.aliases.items() if s == name
        ):
            continue
        value = env.field(name)
        if value is UNKNOWN or value is None or not source:
            continue
        found[name] = Derived(name, value, source)
        for alias, stored in env.aliases.items():
            if stored == name and published.get(alias) is None:
                found[alias] = Derived(alias, value, source)
    return found


# -- readings of vLLM's model code (not of a configuration class) -------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _attn_type_list(get: Getter) -> list[Derived]:
    """MiniMax-Text-01 / M1: vLLM's minimax_text_01.py reads attn_type_list (0 lightning linear
    attention, 1 softmax attention)."""
    values = get("attn_type_list")
    if get("layer_types") is not None or not isinstance(values, list):
        return []
    kinds = {0: "linear_attention", 1: "full_attention"}
    if not all(_int(v) in kinds for v in values):
        return []
    return [
        Derived(
            "layer_types",
            [kinds[v] for v in values],
            "attn_type_list (vLLM minimax_text_01.py: 0 = linear attention, 1 = softmax attention)",
        )
    ]


def _falcon_h1(get: Getter) -> list[Derived]:
    layers = _int(get("num_hidden_layers"))
    if get("layer_types") is not None or layers is None:
        return []
    return [
        Derived(
            "layer_types",
            ["attention+mamba"] * layers,
            "Falcon-H1 runs attention and Mamba2 in parallel in every layer (vLLM falcon_h1.py)",
        )
    ]


def _llama4(get: Getter) -> list[Derived]:
    """vLLM llama4.py: RoPE layers use chunked local attention only when attention_chunk_size
    is set; transformers' layer_types says chunked for every RoPE layer."""
    if get("attention_chunk_size") is not None or get("layer_types_published") is not None:
        return []
    nope = get("no_rope_layers")
    if not isinstance(nope, list):
        return []
    return [
        Derived(
            "layer_types",
            ["full_attention"] * len(nope),
            "vLLM llama4.py: attention_chunk_size null, so every layer is full attention",
        )
    ]


def _mimo_v2(get: Getter) -> list[Derived]:
    pattern = get("hybrid_layer_pattern")
    if get("layer_types") is not None or not isinstance(pattern, list):
        return []
    if not all(_int(v) in (0, 1) for v in pattern):
        return []
    return [
        Derived(
            "layer_types",
            ["sliding_attention" if v == 1 else "full_attention" for v in pattern],
            "hybrid_layer_pattern (vLLM mimo_v2.py: 1 = sliding-window layer with the swa_* "
            "geometry, 0 = full attention)",
        )
    ]


HAND_RULES: dict[str, Rule] = {
    "minimax_m1": _attn_type_list,
    "minimax_text_01": _attn_type_list,
    "minimax": _attn_type_list,
    "falcon_h1": _falcon_h1,
    "llama4_text": _llama4,
    "llama4": _llama4,
    "mimo_v2_flash": _mimo_v2,
    "mimo_v2": _mimo_v2,
}


def derive(
    classes: ConfigClasses,
    model_type: str | None,
    get: Getter,
    published: Mapping[str, Any] | None = None,
    *,
    text_key: str | None = None,
    top_model_type: str | None = None,
) -> tuple[dict[str, Derived], str]:
    """Derived fields for one text config, and a sentence saying how the config was read.

    `published` is the text config as config.json holds it; `get` reads a published field by
    its canonical name (aliases looked through)."""
    published = published if published is not None else {}
    cls = classes.text_class(model_type, text_key, top_model_type)
    found = class_fields(classes, cls, published) if cls is not None else {}
    rule = HAND_RULES.get(model_type or "") or HAND_RULES.get(top_model_type or "")
    if rule is not None:

        def merged(name: str) -> Any:
            if name == "layer_types_published":
                return get("layer_types")
            value = get(name)
            return value if value is not None or name not in found else found[name].value

        for extra in rule(merged):
            found[extra.name] = extra
    if cls is None and rule is None:
        return {}, (
            f"config read as published: no configuration class for model_type {shown(repr(model_type))} "
            "in transformers or vLLM, so no class defaults are filled in"
        )
    names = ", ".join(sorted(found)) if found else "nothing"
    if cls is None:
        return found, (
            f"config read as published, with a rule of vLLM's model code for {shown(repr(model_type))} "
            f"(no configuration class for it in transformers or vLLM): derived {names}"
        )
    return found, (
        f"config read with the defaults and derivations of {cls.origin} {cls.name} "
        f"({cls.path}), read statically (transformers not imported): {len(found)} fields "
        "config.json leaves out filled in"
    )


def as_mapping(derived: Mapping[str, Derived]) -> dict[str, Any]:
    return {name: d.value for name, d in derived.items()}
