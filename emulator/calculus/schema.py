"""The JSON shape of region programs (docs/regions.md) as a JSON Schema, checked with `jsonschema`.

`validate(doc)` raises a RegionError at the first shape error -- its JSON path and the plain
words the loader has always printed (`$.body.seq[1].parallel[0]: an axis is [name, hi] or
[name, lo, hi], got ['i']`).  The schema says what each value *is*; the loader then builds the
program and checks what depends on meaning (names resolve, ranks, array shapes from
parameters, rectangular tables, policies), which JSON Schema cannot express.

Besides the standard keywords, four of ours (registered with jsonschema's validator extension
mechanism) keep the messages and paths exact:

- `x-what`: the words before ", got <type>" when a value has the wrong type;
- `x-messages`: {keyword: message} for the other keywords (a format string: `{value}` is the
  offending value, `{{` a brace);
- `x-name`: an identifier [A-Za-z_][A-Za-z0-9_]* that is not a Python reserved word (expressions
  are parsed by Python's parser), the value named by the keyword's text;
- `x-names`: every key of the object is such an identifier (the error's path is the key's);
- `x-construct`: a region node has exactly one construct key, and is checked against that
  construct's schema.

Keywords are listed in each subschema in the order the loader checked them before (jsonschema
applies them in order), so a program with several problems reports the one it always did.

jsonschema costs about 67 us per region node (its `descend` builds a validator per subschema),
so a document is first checked by fastjsonschema against the same schema with our keywords
translated into standard ones (`standard`: x-name a pattern and a `not enum` of the reserved
words, x-names `propertyNames`, x-construct an if/then chain on the construct key, x-node a
`$ref` to the node schema): it only decides validity, quickly.  Only a document it does not
accept -- or one it cannot finish, nested deeper than Python's recursion limit -- goes through
jsonschema node by node, which finds and words the first error (and accepts the document when
it finds none: the fast check may be stricter, never looser).
"""
from __future__ import annotations

import re
from dataclasses import fields

import jsonschema
from jsonschema import Draft202012Validator, validators

from isa.atomicio import quote, shown

from .errors import RegionError
from .expr import RESERVED

CONSTRUCTS = ("op", "block", "gpr", "seq", "if", "parallel", "serial", "pipeline", "reduce", "scan")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def type_name(v) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(v), type(v).__name__)


def key_segment(k) -> str:
    """An object key as a JSON-path segment: as it is when it is a short identifier, else
    quoted and cut (a key is untrusted text: it may be huge or hold control characters)."""
    return k if isinstance(k, str) and len(k) <= 64 and _NAME.match(k) else quote(k, 40)


def json_path(parts) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{key_segment(p)}"
    return out


def name_error(v, what: str) -> str | None:
    """Why `v` is not a usable name, or None."""
    if not isinstance(v, str) or not _NAME.match(v):
        return f"{what} must be an identifier [A-Za-z_][A-Za-z0-9_]*, got {shown(repr(v))}"
    if v in RESERVED:
        return f"{what} cannot be {quote(v)}: a reserved word of Python, whose parser reads the expressions"
    return None


# ---------------------------------------------------------------------------------------------
# The schema

def _what(words: str, **schema) -> dict:
    return {**schema, "x-what": words}


EXPR = _what("an expression is a string or a number", type=["string", "number", "boolean"])
OPT_EXPR = _what("an expression is a string or a number", type=["string", "number", "boolean", "null"])
NODE = {"x-node": "required"}       # a child region node (checked on its own, see validate)
OPT_NODE = {"x-node": "optional"}   # null: absent
AXIS = {"type": "array", "minItems": 2, "maxItems": 3,
        "x-messages": {k: "an axis is [name, hi] or [name, lo, hi], got {value}" for k in ("type", "minItems", "maxItems")},
        "prefixItems": [{"x-name": "an axis name"}], "items": EXPR}


def _domain(key: str) -> dict:
    return _what("a domain is a list of axes [name, hi] or [name, lo, hi]", type="array", items=AXIS)


def _string(key: str) -> dict:
    return _what(f"'{key}' is a string", type=["string", "null"])


def _carries(key: str) -> dict:
    return _what(f"'{key}' is an object name -> expression", type="object", **{"x-names": "a carried value"},
                 patternProperties={"": EXPR})


def _node_schema(key: str, props: dict, required=()) -> dict:
    """A construct: its construct key plus `props`; unknown keys and missing ones are errors."""
    return {"additionalProperties": False, "required": [key, *required], "properties": props}


def _block_mapping_schema() -> dict:
    """The block mapping form mirrors isa.block's dataclasses field for field: their fields are
    the allowed keys (read from the dataclasses, so the isa stays the one place they are named)."""
    from isa.block import BDatr, BDim, BIor, BIos, BStart, TileBinding

    def obj(cls, required=(), null=False):
        props = {f.name: (_what("spelling is a string", type="string") if f.name == "spelling"
                          else _what(f"{f.name} is an integer", type=["integer", "null"])) for f in fields(cls)}
        return _what(f"{cls.__name__} is an object", type=["object", "null"] if null else "object",
                     additionalProperties=False, required=list(required), properties=props)
    return {"type": "object", "additionalProperties": False, "required": ["bstart", "iot"], "properties": {
        "bstart": obj(BStart, ("Mode", "Function", "DataType")),
        "iot": _what("iot is a list of bindings", type="array", items=obj(TileBinding, ("tile", "PE_MASK"))),
        **{k: obj(cls, null=True) for k, cls in (("dim", BDim), ("datr", BDatr), ("ior", BIor), ("ios", BIos))}}}


TILE_REF = {"type": "object", "additionalProperties": False, "required": ["pe", "tile"],
            "properties": {"pe": EXPR, "tile": EXPR}}
ACCESSES = {"reads": _what("'reads' is a list of element accesses", type="array", items=EXPR),
            "writes": _what("'writes' is a list of element accesses", type="array", items=EXPR)}

CONSTRUCT_SCHEMAS = {
    "op": _node_schema("op", {
        "op": _what("'op' is a statement or a list of statements", type=["string", "array"], minItems=1,
                    items=_what("a statement is a string 'target = value'", type="string"),
                    **{"x-messages": {"minItems": "an op needs at least one statement"}}),
        **ACCESSES, "name": _string("name")}),
    "block": _node_schema("block", {
        "block": _what("'block' is block text or a block mapping", type=["string", "object", "block"],
                       **{"if": {"type": "object"}, "then": _block_mapping_schema()}),
        "name": _string("name")}),
    "gpr": _node_schema("gpr", {
        "gpr": _what("'gpr' is an object {pe, index, value}", type="object", additionalProperties=False,
                     required=["pe", "index", "value"], properties={"pe": EXPR, "index": EXPR, "value": EXPR})}),
    "seq": _node_schema("seq", {
        "seq": _what("'seq' is a list of region nodes (or block text)", type=["array", "string"], items=NODE)}),
    "if": _node_schema("if", {"if": EXPR, "then": NODE, "else": OPT_NODE}, ["then"]),
    "parallel": _node_schema("parallel", {
        "parallel": _domain("parallel"), "where": OPT_EXPR, "body": NODE,
        "batch": _what("'batch' is a boolean", type="boolean"),
        "snapshot": _what("'snapshot' is a list of array names", type="array",
                          items={"x-name": "a snapshot array"})}, ["body"]),
    "serial": _node_schema("serial", {
        "serial": _domain("serial"), "where": OPT_EXPR, "body": NODE, "carry": _carries("carry"),
        "next": _carries("next")}, ["body"]),
    "pipeline": _node_schema("pipeline", {
        "pipeline": _domain("pipeline"), "where": OPT_EXPR,
        "stages": _what("'stages' is a list of region nodes", type="array", items=NODE),
        "ii": _what("'ii' is a positive integer", type="integer")}, ["stages"]),
    "reduce": {**_node_schema("reduce", {
        "reduce": _domain("reduce"), "where": OPT_EXPR,
        "into": {"if": {"type": "object"}, "then": TILE_REF, "else": {"x-name": "'into' (the accumulator array A)"}},
        "group": _what("'group' (g) is a list of index expressions", type="array", items=EXPR),
        "value": {"if": {"type": "object"}, "then": TILE_REF, "else": EXPR},
        "combine": _string("combine"), "policy": _string("policy"), "lift": _string("lift"),
        "mask": OPT_EXPR, "key": _what("'key' is a list of index expressions", type=["array", "null"], items=EXPR),
        "body": OPT_NODE, "seed_side": _string("seed_side")}, ["into", "value", "combine"]),
        # a tile accumulator takes tile contributions, an array accumulator expressions
        "if": {"required": ["into"], "properties": {"into": {"type": "object"}}},
        "then": {"properties": {"value": {"type": "object", "x-messages": {
            "type": "a tile reduction contributes a tile {{pe, tile}}"}}}}},   # (braces: a format string)
    "scan": _node_schema("scan", {
        "scan": _domain("scan"), "where": OPT_EXPR, "into": {"x-name": "'into' (the array of prefix results)"},
        "group": _what("'group' (g) is a list of index expressions", type="array", items=EXPR),
        "value": EXPR, "combine": _string("combine"), "policy": _string("policy"),
        "exclusive": _what("'exclusive' is a boolean", type="boolean"), "seed": OPT_EXPR,
        "body": OPT_NODE}, ["into", "value", "combine"]),
}
NODE_KEYS = {k: set(s["properties"]) for k, s in CONSTRUCT_SCHEMAS.items()}

_NODE_WORDS = "a region node is an object with one of the keys " + ", ".join(CONSTRUCTS)
NODE_SCHEMA = _what(_NODE_WORDS, type=["object", "block"], **{"x-construct": CONSTRUCT_SCHEMAS})
_ELEMENT = _what("an element value is an integer, number, string or null", type=["integer", "number", "string", "null"])
_BOOL = {law: _what(f"'{law}' is a boolean", type="boolean") for law in ("associative", "commutative", "regroup")}

SCHEMA = {
    **_what("a region program is a JSON object", type="object"),
    "additionalProperties": False, "required": ["body"],
    "properties": {
        "format": {},
        "params": _what("'params' is an object name -> integer or integer table", type="object",
                        **{"x-names": "a parameter name"},
                        patternProperties={"": _what("a parameter is an integer or a (nested) list of integers",
                                                   type=["integer", "array"])}),
        "arrays": _what("'arrays' is an object name -> {shape, init?, fill?}", type="object",
                        **{"x-names": "an array name"},
                        patternProperties={"": _what(
                            "an array declaration is an object {shape, init?, fill?}", type="object",
                            additionalProperties=False, required=["shape"],
                            properties={"shape": _what("'shape' is a list of extents", type="array", items=EXPR),
                                        "init": {}, "fill": _ELEMENT},
                            **{"not": {"required": ["init", "fill"]},
                               "x-messages": {"not": "give 'init' or 'fill', not both"}})}),
        "functions": _what("'functions' is an object name -> {args, body, kind?, laws}", type="object",
                           **{"x-names": "a function name"},
                           patternProperties={"": _what(
                               "a function is an object {args, body, kind?, associative?, commutative?, regroup?}",
                               type="object", additionalProperties=False, required=["args", "body"],
                               properties={
                                   "args": _what("'args' is a list of names", type="array", uniqueItems=True,
                                                 items={"x-name": "an argument"},
                                                 **{"x-messages": {"uniqueItems": "argument names must be distinct"}}),
                                   "body": EXPR,
                                   "kind": {"enum": ["merge", "update", "rupdate", "map"], "x-messages": {
                                       "enum": "kind is merge, update, rupdate or map, got {value}"}},
                                   **_BOOL})}),
        "body": NODE,
    },
}


# ---------------------------------------------------------------------------------------------
# The validator: Draft 2020-12, JSON's integer (not bool, not 1.0), isa.Block objects from the
# Python builder, and our keywords.

def _is_block(checker, v) -> bool:
    from isa.block import Block
    return isinstance(v, Block)


_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({
    "integer": lambda c, v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda c, v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "block": _is_block,
})


def _x_name(validator, what, instance, schema):
    why = name_error(instance, what)
    if why is not None:
        yield jsonschema.ValidationError(why)


def _x_names(validator, what, instance, schema):
    if isinstance(instance, dict):
        for k in instance:
            why = name_error(k, what)
            if why is not None:
                yield jsonschema.ValidationError(why, path=[k])


def _x_construct(validator, constructs, instance, schema):
    if not isinstance(instance, dict):
        return
    kinds = [k for k in CONSTRUCTS if k in instance]
    if len(kinds) != 1:
        found = "none" if not kinds else " and ".join(kinds)
        yield jsonschema.ValidationError(f"a region node has exactly one of {', '.join(CONSTRUCTS)}; found {found}")
        return
    yield from validator.descend(instance, constructs[kinds[0]])


class _Child(jsonschema.ValidationError):
    """Not an error: a child region node, queued by validate (its path gathers on the way up)."""


def _x_node(validator, kind, instance, schema):
    if instance is not None or kind != "optional":
        yield _Child("a child node", instance=instance)


def _annotation(validator, value, instance, schema):
    return ()


_Validator = validators.extend(Draft202012Validator, validators={
    "x-name": _x_name, "x-names": _x_names, "x-construct": _x_construct, "x-node": _x_node,
    "x-what": _annotation, "x-messages": _annotation}, type_checker=_TYPES)


def message(err: jsonschema.ValidationError, base=()) -> tuple[str, str]:
    """(JSON path, why) of a validation error, in the loader's words (`base`: the path of the
    node it was found in)."""
    s, v, kw = err.schema, err.instance, err.validator
    path = list(base) + list(err.absolute_path)
    custom = s.get("x-messages", {}) if isinstance(s, dict) else {}
    if kw in custom:
        return json_path(path), custom[kw].format(value=shown(repr(v)))
    if kw == "type" and "x-what" in s:
        return json_path(path), f"{s['x-what']}, got {type_name(v)}"
    if kw == "additionalProperties":
        allowed = set(s.get("properties", {}))
        extra = next(k for k in v if k not in allowed)
        return json_path(path + [extra]), f"unknown key (expected one of: {', '.join(sorted(allowed))})"
    if kw == "required":
        missing = next(k for k in err.validator_value if k not in v)
        return json_path(path), f"missing required key '{missing}'"
    return json_path(path), err.message       # x-name, x-construct: already in our words


def validate(doc) -> None:
    """RegionError at the first shape error of a program document (nothing when it is well formed):
    the fast check accepts it, or the node-by-node check below decides and words the error."""
    if not _fast_accepts(_fast_program, doc):
        validate_per_node(doc)


def validate_per_node(doc) -> None:
    """The reference check (jsonschema): RegionError at the first shape error of a document.

    Each region node is validated on its own, its child nodes queued (the `x-node` keyword):
    jsonschema descends through nested generators, which would bound the nesting depth of a
    program by Python's recursion limit; this way the depth costs no recursion here at all.
    Nodes are visited in document order (depth first), so the first error is the one the
    loader always reported first.  A node's path is kept as (parent's, own steps) and spelled out
    only for an error: copying it per node would make the check quadratic in the depth."""
    stack = [(None, doc, _VALIDATOR)]
    while stack:
        base, inst, validator = stack.pop()
        children = []
        for err in validator.iter_errors(inst):
            if isinstance(err, _Child):
                children.append(((base, tuple(err.absolute_path)), err.instance, _NODE_VALIDATOR))
                continue
            raise RegionError(*message(err, _spelled(base)))
        stack.extend(reversed(children))


def _spelled(base) -> tuple:
    steps = []
    while base is not None:
        base, own = base
        steps.append(own)
    return tuple(p for own in reversed(steps) for p in own)


def validate_block_mapping(m, path: str) -> None:
    """RegionError at the first shape error of a block mapping at `path`: fast, as validate."""
    if not _fast_accepts(_fast_block, m):
        validate_block_mapping_per_node(m, path)


def validate_block_mapping_per_node(m, path: str) -> None:
    err = next(_BLOCK_VALIDATOR.iter_errors(m), None)
    if err is not None:
        p, why = message(err)
        raise RegionError(path + p[1:], why)


_VALIDATOR = _Validator(SCHEMA)
_NODE_VALIDATOR = _Validator(NODE_SCHEMA)
_BLOCK_VALIDATOR = _Validator(_block_mapping_schema())


# ---------------------------------------------------------------------------------------------
# The fast check: the schema above in standard keywords (draft 7), compiled by fastjsonschema.

_NODE_REF = {"$ref": "#/definitions/node"}
_FAST_NAME = {"type": "string", "pattern": "^" + _NAME.pattern, "not": {"enum": sorted(RESERVED)}}
# keywords whose value is kept as it is, and those whose value is a schema, a list or a map of them
_AS_IS = {"type", "enum", "required", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength"}
_ONE, _MANY, _MAP = {"not", "if", "then", "else", "additionalProperties"}, {"allOf", "anyOf", "oneOf"}, \
    {"properties", "patternProperties"}
_WORDING = {"x-what", "x-messages"}


def _construct_check(constructs: dict, defs: dict) -> dict:
    """x-construct in standard keywords: a node has a construct key (`anyOf` of `required`), and
    with construct key k it is k's schema (`dependencies`; each one a definition of its own, so
    the generated code stays shallow) and has no other construct key (implied when k's schema is
    closed and names no other one).  Keywords of objects only: a non-object passes, as with
    x-construct."""
    for k in CONSTRUCTS:
        s, others = constructs[k], [j for j in CONSTRUCTS if j != k]
        defs[f"construct-{k}"] = one = standard(s, defs)
        if s.get("additionalProperties") is not False or set(s.get("properties", ())) & set(others):
            defs[f"construct-{k}"] = {"allOf": [one, {"not": {"anyOf": [{"required": [j]} for j in others]}}]}
    return {"anyOf": [{"required": [k]} for k in CONSTRUCTS],
            "dependencies": {k: {"$ref": f"#/definitions/construct-{k}"} for k in CONSTRUCTS}}


def standard(schema, defs: dict):
    """`schema` with our keywords replaced by standard ones of the same or a stricter meaning
    (x-node: a `$ref` to `#/definitions/node`; the subschemas they refer to are added to
    `defs`, the definitions of the schema compiled); ValueError on a keyword it does not know, so a
    keyword added to the schema cannot slip through the fast check unchecked."""
    if not isinstance(schema, dict):
        return schema
    out, extra = {}, []
    for kw, v in schema.items():
        if kw in _WORDING:
            continue
        if kw == "enum" and not all(isinstance(x, str) for x in v):
            # fastjsonschema compares with Python's == (True == 1), jsonschema by JSON equality:
            # the same only for strings
            raise ValueError("the fast check translates string enums only")
        if kw in _AS_IS:
            out[kw] = v
        elif kw in _ONE:
            out[kw] = standard(v, defs)
        elif kw in _MANY:
            out[kw] = [standard(x, defs) for x in v]
        elif kw in _MAP:
            out[kw] = {k: standard(x, defs) for k, x in v.items()}
        elif kw == "items" and "prefixItems" in schema:     # draft 7 spells 2020-12's prefixItems so
            out["additionalItems"] = standard(v, defs)
        elif kw in ("items", "prefixItems"):
            out["items"] = [standard(x, defs) for x in v] if kw == "prefixItems" else standard(v, defs)
        elif kw == "x-name":
            extra.append(_FAST_NAME)
        elif kw == "x-names":
            extra.append({"propertyNames": _FAST_NAME})
        elif kw == "x-construct":
            extra.append(_construct_check(v, defs))
        elif kw == "x-node":
            if "node" not in defs:
                defs["node"] = {}                      # (a placeholder while the node schema recurses)
                defs["node"] = standard(NODE_SCHEMA, defs)
            extra.append(_NODE_REF if v == "required" else {"anyOf": [_NODE_REF, {"type": "null"}]})
        else:
            raise ValueError(f"schema keyword {kw!r} has no standard form for the fast check")
    if extra:
        if not out and len(extra) == 1:
            return extra[0]
        out["allOf"] = out.get("allOf", []) + extra
    return out


# JSON's types exactly as the jsonschema validator reads them (_TYPES): fastjsonschema's own
# admit tuples as arrays, Decimal as a number and, since draft 6, 1.0 as an integer, and know no
# isa.Block.  Written here because fastjsonschema has no type-checker hook (jsonschema's has).
_PY_TYPES = {"null": "NoneType", "boolean": "bool", "integer": "int", "number": "int, float",
             "string": "str", "array": "list", "object": "dict", "block": "Block"}


def _generate(schema: dict):
    """fastjsonschema's code for `schema` (draft 7), its globals and the entry function's name."""
    from fastjsonschema.draft07 import CodeGeneratorDraft07
    from fastjsonschema.ref_resolver import RefResolver
    from isa.block import Block

    class ExactTypes(CodeGeneratorDraft07):
        def generate_type(self):
            types = self._definition["type"]
            types = [types] if isinstance(types, str) else types
            bool_out = {"integer", "number"} & set(types) and "boolean" not in types
            with self.l("if not isinstance({variable}, ({})){}:", ", ".join(_PY_TYPES[t] for t in types) or "()",
                        f" or isinstance({self._variable}, bool)" if bool_out else ""):
                self.exc("{name} must be {}", " or ".join(types), rule="type")

        @property
        def global_state(self):
            return {**super().global_state, "Block": Block}

    resolver = RefResolver.from_schema(schema, handlers={}, store={})
    gen = ExactTypes(schema, resolver=resolver, use_default=False, detailed_exceptions=False)
    return gen.func_code, gen.global_state, resolver.get_scope_name()


def _compile(schema: dict):
    code, state, name = _generate(schema)
    exec(code, state)
    return state[name]


class _Fast:
    """A compiled fast check, compiled on first use (once per process)."""

    def __init__(self, schema_of):
        self._schema_of, self._check = schema_of, None

    def __call__(self, doc):
        if self._check is None:
            self._check = _compile(self._schema_of())
        self._check(doc)


def _standard_root(schema: dict) -> dict:
    defs: dict = {}
    root = standard(schema, defs)
    return {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": defs, **root}


_fast_program = _Fast(lambda: _standard_root(SCHEMA))
_fast_block = _Fast(lambda: _standard_root(_block_mapping_schema()))


def _fast_accepts(check, doc) -> bool:
    """Whether the fast check accepts `doc`.  Any failure of it -- a violation, a document nested
    deeper than the recursion limit (the compiled check recurses per node), a value its generated
    code trips on -- only means "not shown valid": the jsonschema check then decides."""
    try:
        check(doc)
    except Exception:          # noqa: BLE001 -- see above: never a verdict, only "ask jsonschema"
        return False
    return True
