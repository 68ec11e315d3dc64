"""Checks provider tool definitions with the providers' own SDK types, offline.

    tests/peers/.venv/bin/python tests/peers/provider_check.py < cases.json

Reads a JSON list of cases, `{"id", "shape", "definition"}`, and prints a JSON list
of `{"id", "errors": [...]}` (an empty list: the definition passed). The adapter's
tests (guest/tests/adapter/) send every converted corpus tool through it, and a few
definitions that must fail, so that a check that cannot fail is caught.

Shapes and what checks them (the SDKs are pinned in requirements-providers.txt):

- `gemini`: google-genai's `types.FunctionDeclaration` (pydantic, `extra="forbid"`,
  so an unknown keyword anywhere in a `Schema` fails), with the SDK's warnings made
  errors (its `Type` enum only warns on an unknown type). Then what the API refuses
  and the SDK does not check: `$ref`/`$defs`/`additionalProperties` (the SDK model
  has fields for them; the Gemini API, which `parameters` targets, does not take
  them), `enum` on a non-string, a `format` the API refuses, `properties`/`required`
  off an object, a `required` name with no property, a root that is not an object
  with properties, names against the documented patterns.
- `chat` / `responses`: the openai SDK's `ChatCompletionFunctionToolParam`
  (+ `FunctionDefinition`) and `FunctionToolParam`. These are TypedDicts: they are
  validated with pydantic's `TypeAdapter` and their declared keys; `parameters` must
  be a valid JSON Schema (jsonschema's metaschema check, of the draft the schema
  declares, else 2020-12) with an object root. With `strict: true`, the documented Structured Outputs rules are
  checked as written in the guide, since no SDK validates them offline (see
  `strict_errors`).
- `anthropic`: the anthropic SDK's `ToolParam` and `InputSchemaTyped` the same way,
  the documented name pattern, and `input_schema` a valid schema (as above).
- `mcp`: a name and a valid JSON Schema `inputSchema`.
"""

import json
import re
import sys
import warnings

import jsonschema
import pydantic
from anthropic.types import ToolParam
from anthropic.types.tool_param import InputSchemaTyped
from google.genai import types as genai
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from openai.types.shared_params import FunctionDefinition

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
GEMINI_PARAMETER = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")


def typed_dict_errors(value, typed_dict, where):
    """The TypedDict's declared keys and pydantic's validation of its types."""
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    errors = []
    allowed = typed_dict.__required_keys__ | typed_dict.__optional_keys__
    for key in sorted(set(value) - allowed):
        errors.append(f"{where}: unknown key {key!r}")
    for key in sorted(typed_dict.__required_keys__ - set(value)):
        errors.append(f"{where}: missing {key!r}")
    try:
        pydantic.TypeAdapter(typed_dict).validate_python(value, strict=False)
    except pydantic.ValidationError as e:
        errors.append(f"{where}: {e}")
    return errors


def json_schema_errors(schema, where):
    """A valid schema of the draft it declares in `$schema` (2020-12 if none): MCP
    servers built on zod-to-json-schema declare draft 7 and write its tuples."""
    if not isinstance(schema, (dict, bool)):
        return [f"{where}: missing, or not a schema"]
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        return [f"{where}: not a valid JSON Schema ({validator.__name__}): {e.message}"]
    return []


def object_root_errors(schema, where):
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return [f"{where}: the root is not `type: object`"]
    return []


# Structured Outputs, "Supported schemas" (the OpenAI guide).
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$ref", "$defs", "description", "title",
    "pattern", "format", "minLength", "maxLength",
    "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems",
}
STRICT_TYPES = {"string", "number", "boolean", "integer", "object", "array", "null"}


def strict_errors(schema):
    """The guide's rules for `strict: true`, as written there."""
    errors = []
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        errors.append("root: must be an object, not anyOf")
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    tally = {"properties": 0, "enum": 0, "strings": 0}

    def node(s, path, depth, root=False):
        if not isinstance(s, dict):
            errors.append(f"{path}: a schema must be an object")
            return
        for key in s:
            if key not in STRICT_KEYWORDS:
                errors.append(f"{path}: unsupported keyword {key!r}")
            if key == "$defs" and not root:
                errors.append(f"{path}: $defs only at the root")
        if "$ref" in s:
            if set(s) - {"$ref"}:
                errors.append(f"{path}: $ref with siblings {sorted(set(s) - {'$ref'})}")
            ref = s["$ref"]
            if ref != "#" and not (ref.startswith("#/$defs/") and ref[len("#/$defs/"):].replace("~1", "/").replace("~0", "~") in defs):
                errors.append(f"{path}: $ref {ref!r} is not # or a $defs entry")
            return
        if "anyOf" in s:
            for i, b in enumerate(s["anyOf"]):
                node(b, f"{path}/anyOf/{i}", depth)
            if "type" in s:
                errors.append(f"{path}: anyOf beside type")
            return
        t = s.get("type")
        types = t if isinstance(t, list) else [t]
        if t is None:
            errors.append(f"{path}: no type")
            return
        for x in types:
            if x not in STRICT_TYPES:
                errors.append(f"{path}: type {x!r}")
        non_null = [x for x in types if x != "null"]
        if len(non_null) > 1:
            errors.append(f"{path}: a type array of more than one type and null")
        if "enum" in s:
            tally["enum"] += len(s["enum"])
            tally["strings"] += sum(len(v) for v in s["enum"] if isinstance(v, str))
        if "format" in s and s["format"] not in STRICT_FORMATS:
            errors.append(f"{path}: format {s['format']!r}")
        nested = "object" in types or "array" in types
        depth += 1 if nested else 0
        if depth > 10:
            errors.append(f"{path}: more than 10 levels of nesting")
        if "object" in types:
            props = s.get("properties")
            if not isinstance(props, dict):
                errors.append(f"{path}: an object without properties")
                props = {}
            if s.get("additionalProperties") is not False:
                errors.append(f"{path}: additionalProperties is not false")
            if sorted(s.get("required", [])) != sorted(props):
                errors.append(f"{path}: required is not every property")
            tally["properties"] += len(props)
            for name, sub in props.items():
                tally["strings"] += len(name)
                node(sub, f"{path}/properties/{name}", depth)
        if "array" in types:
            if "items" not in s:
                errors.append(f"{path}: an array without items")
            else:
                node(s["items"], f"{path}/items", depth)

    node(schema, "", 0, root=True)
    for name, sub in defs.items():
        tally["strings"] += len(name)
        node(sub, f"/$defs/{name}", 0)
    if tally["properties"] > 5000:
        errors.append("more than 5000 object properties")
    if tally["enum"] > 1000:
        errors.append("more than 1000 enum values")
    if tally["strings"] > 120_000:
        errors.append("more than 120,000 characters of names and enum values")
    return errors


def openai_errors(definition, shape):
    if shape == "chat":
        errors = typed_dict_errors(definition, ChatCompletionFunctionToolParam, "tool")
        function = definition.get("function", {})
        errors += typed_dict_errors(function, FunctionDefinition, "function")
    else:
        errors = typed_dict_errors(definition, FunctionToolParam, "tool")
        function = definition
    name = function.get("name", "")
    if not OPENAI_NAME.match(name):
        errors.append(f"name {name!r} does not match {OPENAI_NAME.pattern}")
    parameters = function.get("parameters")
    errors += json_schema_errors(parameters, "parameters")
    errors += object_root_errors(parameters, "parameters")
    if function.get("strict"):
        errors += [f"strict: {e}" for e in strict_errors(parameters)]
    if "output_schema" in function:
        errors += json_schema_errors(function["output_schema"], "output_schema")
    return errors


def anthropic_errors(definition):
    errors = typed_dict_errors(definition, ToolParam, "tool")
    name = definition.get("name", "")
    if not ANTHROPIC_NAME.match(name):
        errors.append(f"name {name!r} does not match {ANTHROPIC_NAME.pattern}")
    schema = definition.get("input_schema")
    if isinstance(schema, dict):
        typed = {k: v for k, v in schema.items() if k in InputSchemaTyped.__annotations__}
        errors += typed_dict_errors(typed, InputSchemaTyped, "input_schema")
    errors += json_schema_errors(schema, "input_schema")
    errors += object_root_errors(schema, "input_schema")
    return errors


GEMINI_FORMATS = {"string": {"date-time", "enum"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}


def gemini_schema_errors(s, path):
    """What the Gemini API refuses in a `Schema` and the SDK's model lets through."""
    errors = []
    if not isinstance(s, dict):
        return [f"{path}: not an object"]
    for key in ("$ref", "$defs", "ref", "defs", "additionalProperties", "additional_properties", "const"):
        if key in s:
            errors.append(f"{path}: {key} (not taken by the Gemini API)")
    t = s.get("type")
    if isinstance(t, str):
        t = t.lower()
    if "enum" in s and t != "string":
        errors.append(f"{path}: enum on type {t!r}")
    if "format" in s and s["format"] not in GEMINI_FORMATS.get(t, set()):
        errors.append(f"{path}: format {s['format']!r} on type {t!r}")
    if ("properties" in s or "required" in s) and t != "object":
        errors.append(f"{path}: properties or required on type {t!r}")
    props = s.get("properties", {})
    for name in s.get("required", []):
        if name not in props:
            errors.append(f"{path}: required {name!r} is not a property")
    if t == "array" and "items" not in s:
        errors.append(f"{path}: an array without items")
    for name, sub in props.items():
        errors += gemini_schema_errors(sub, f"{path}/properties/{name}")
    if "items" in s:
        errors += gemini_schema_errors(s["items"], f"{path}/items")
    for i, sub in enumerate(s.get("anyOf", [])):
        errors += gemini_schema_errors(sub, f"{path}/anyOf/{i}")
    return errors


def gemini_errors(definition):
    errors = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            genai.FunctionDeclaration.model_validate(definition)
        except (pydantic.ValidationError, Warning, AttributeError, TypeError, ValueError) as e:
            # The SDK's `Type` enum raises AttributeError on a type array.
            errors.append(f"FunctionDeclaration: {type(e).__name__}: {e}")
    name = definition.get("name", "")
    if not GEMINI_NAME.match(name):
        errors.append(f"name {name!r} does not match {GEMINI_NAME.pattern}")
    parameters = definition.get("parameters")
    if parameters is not None:
        if parameters.get("type") != "object" or not parameters.get("properties"):
            errors.append("parameters: not an object with properties")
        for name in parameters.get("properties", {}):
            if not GEMINI_PARAMETER.match(name):
                errors.append(f"parameter {name!r} does not match {GEMINI_PARAMETER.pattern}")
        errors += gemini_schema_errors(parameters, "parameters")
    if "response" in definition:
        errors += gemini_schema_errors(definition["response"], "response")
    return errors


def mcp_errors(definition):
    errors = []
    if not isinstance(definition.get("name"), str) or not definition["name"]:
        errors.append("no name")
    errors += json_schema_errors(definition.get("inputSchema"), "inputSchema")
    return errors


def check(case):
    shape, definition = case["shape"], case["definition"]
    if shape == "gemini":
        return gemini_errors(definition)
    if shape in ("chat", "responses"):
        return openai_errors(definition, shape)
    if shape == "anthropic":
        return anthropic_errors(definition)
    if shape == "mcp":
        return mcp_errors(definition)
    return [f"unknown shape {shape!r}"]


def main():
    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        try:
            errors = check(case)
        except Exception as e:  # a checker crash is a failed case, with its cause
            errors = [f"checker raised {type(e).__name__}: {e}"]
        out.append({"id": case["id"], "errors": errors})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
