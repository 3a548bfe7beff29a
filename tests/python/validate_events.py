"""Validates events against engram's JSON Schema files with Python's `jsonschema`.

Run by tests/tests/event_schemas.rs: `python3 validate_events.py SCHEMA_DIR EXAMPLES`, where
EXAMPLES holds one JSON object a line, `{"schema": "<file name>", "event": ...}`. Every
`*.schema.json` of SCHEMA_DIR is checked against the 2020-12 meta-schema and put in the
registry, as a producer would load the folder; then each event is validated against its
schema, with formats asserted (date-time needs rfc3339-validator). Prints one JSON array:
for each line, `{"valid": bool, "fields": [...], "errors": [first few messages]}`, `fields`
being the top-level fields the errors are about (a missing required one by its name, `$` for
the event as a whole).
"""

import json
import pathlib
import sys

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

schema_dir, examples = pathlib.Path(sys.argv[1]), sys.argv[2]

checker = Draft202012Validator.FORMAT_CHECKER
if "date-time" not in checker.checkers:
    sys.exit("jsonschema checks no date-time format: rfc3339-validator is not installed")

schemas = {}
for path in sorted(schema_dir.glob("*.schema.json")):
    schema = json.loads(path.read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("/" + path.name), f"{path.name}: $id {schema['$id']}"
    schemas[path.name] = schema
registry = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values()
)
validators = {
    name: Draft202012Validator(schema, registry=registry, format_checker=checker)
    for name, schema in schemas.items()
}


def message(error):
    where = "/".join(str(p) for p in error.absolute_path) or "$"
    text = f"{where}: {error.message}"
    return text if len(text) <= 200 else text[:200] + "…"


def fields(error):
    """The top-level fields `error` is about."""
    if error.absolute_path:
        return [str(error.absolute_path[0])]
    if error.validator == "required" and isinstance(error.instance, dict):
        return [f for f in error.validator_value if f not in error.instance]
    return ["$"]


results = []
with open(examples, encoding="utf-8") as lines:
    for line in lines:
        item = json.loads(line)
        errors = list(validators[item["schema"]].iter_errors(item["event"]))
        results.append({
            "valid": not errors,
            "fields": sorted({f for e in errors for f in fields(e)}),
            "errors": [message(e) for e in errors[:3]],
        })
print(json.dumps(results))
