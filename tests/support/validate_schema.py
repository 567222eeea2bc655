"""Validates saves against a JSON Schema with Python's `jsonschema`, a validator not
written by savechain (tests/json_schema.rs compares its verdicts with what each save is).

Usage: validate_schema.py SCHEMA SAVE...

Checks the schema itself against the draft 2020-12 meta-schema, then prints one line per
save: `NAME<TAB>valid`, or `NAME<TAB>invalid<TAB>PATH: MESSAGE` for its first error (the
best match). Exits 3, saying what to install, when `jsonschema` is missing; 2 when the
schema is not a valid schema.
"""

import json
import os
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
except ImportError as error:
    sys.stderr.write(
        "Python's jsonschema package is needed (%s): install it with "
        "`apt-get install python3-jsonschema` or "
        "`pip install --break-system-packages jsonschema`\n" % error
    )
    sys.exit(3)


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: validate_schema.py SCHEMA SAVE...\n")
        sys.exit(2)
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as error:
        sys.stderr.write("not a valid draft 2020-12 schema: %s\n" % error)
        sys.exit(2)
    validator = Draft202012Validator(schema)
    for path in sys.argv[2:]:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            save = json.load(f)
        error = best_match(validator.iter_errors(save))
        if error is None:
            print("%s\tvalid" % name)
        else:
            where = "/".join(str(part) for part in error.absolute_path)
            print("%s\tinvalid\t%s: %s" % (name, where, error.message[:300]))


if __name__ == "__main__":
    main()
