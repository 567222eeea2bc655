//! A shape to a JSON Schema (draft 2020-12) of a whole save of one version, for editors
//! and for validators that know nothing of savechain.
//!
//! The schema describes the save's *text*, as a person types it, so every spelling a
//! reader accepts is in it: a double as a plain number, `["d", "<hexfloat>"]` or
//! `["d", <decimal>]` (canonical text and the decimal view alike), a byte string as
//! `["b", "..."]`, an array that looks like a tag escaped as `["a", [...]]` (FORMAT.md,
//! section 3.4) as well as any other array written plainly or escaped.

use serde_json::{json, Map, Value as Json};

use super::{IntRange, Object, Shape};

/// The JSON Schema dialect written into `$schema`.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Every spelling of a double a reader accepts in a `d` tag's string (FORMAT.md, 3.2):
/// hexadecimal literals as C's `strtod` takes them, infinities and NaNs in any case.
const DOUBLE_SPELLING: &str = r"^[+-]?(0[xX]([0-9a-fA-F]+(\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?|[iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN](:0[xX][0-9a-fA-F]+)?)$";

/// A byte string's characters: one per byte, U+0000 to U+00FF (FORMAT.md, 3.3).
const BYTE_CHARACTERS: &str = r"^[\u0000-\u00ff]*$";

/// A semantic version, as `meta.writer` holds one (FORMAT.md, section 2).
const SEMVER: &str = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$";

/// The JSON Schema (draft 2020-12) of a save at `version` whose `data` the game reads as
/// `shape`, with each mod's part checked by the mod's shape: `mods` holds, for each mod,
/// its name, the version of its data the shape is of, and that shape.
///
/// `game`, when the chain names its game, goes into the schema's title ("Starlane Traders
/// save, version 9").
///
/// What the schema accepts:
/// - the envelope: `data` and `meta`, nothing else; `meta.version` exactly `version`;
///   `meta.writer` a semantic version, `meta.game` text, `meta.history` an array,
///   `meta.mods` an object; any other member of `meta` (it is kept as it is);
/// - `data` as the shape says, in every spelling a reader takes (the module's
///   documentation), objects closed (`additionalProperties: false`), each member's
///   `description` saying in words what the game reads there, for an editor's hover;
/// - `data.mods.<name>` checked by mod `<name>`'s shape when `meta.mods.<name>.version`
///   is the version given for it (data of a mod at a version not given, or of a mod not
///   given, is not checked; a mod may be given at several versions, each checked where
///   the save records it); when the game's
///   shape is an object without a `mods` member, `data.mods` is still allowed, as an
///   object.
///
/// Where it is looser than loading, because JSON Schema cannot tell: a number with a zero
/// fraction or an exponent (`3.0`, `1e2`) counts as an integer in JSON Schema, while a
/// save reads it as a double (`save-upgrade validate` tells them apart); a plain integer
/// beyond -2^63..2^64-1 where a double is read, a double too large (`1e400`), a NaN
/// payload out of range, or a shared table's ids are not checked.
///
/// Integer bounds are written as exact JSON integers (`18446744073709551615`): a
/// validator with exact integers (Python's `jsonschema`) compares them exactly; one with
/// only doubles (an editor in JavaScript) rounds the largest.
///
/// The same arguments always give the same schema, keys sorted.
///
/// ```
/// use savechain::shape::{json_schema, Shape};
///
/// let shape: Shape = r#"{"object": {"hull": "double", "crew": "u32"}}"#.parse()?;
/// let schema = json_schema(Some("Starlane Traders"), &shape, 9, &[]);
/// assert_eq!(schema["title"], "Starlane Traders save, version 9");
/// assert_eq!(schema["properties"]["meta"]["properties"]["version"]["const"], 9);
/// let crew = &schema["properties"]["data"]["properties"]["crew"];
/// assert_eq!(crew["maximum"], 4294967295u64);
/// assert_eq!(crew["description"], "an integer from 0 to 4294967295");
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn json_schema(
    game: Option<&str>,
    shape: &Shape,
    version: u64,
    mods: &[(&str, u64, &Shape)],
) -> Json {
    let title = match game {
        Some(game) => format!("{game} save, version {version}"),
        None => format!("Save, version {version}"),
    };
    let mut defs = Defs::default();
    let data = data_schema(&mut defs, shape);
    let checks: Vec<Json> = mods
        .iter()
        .map(|(name, version, shape)| mod_check(&mut defs, name, *version, shape))
        .collect();
    let mut root = json!({
        "$schema": DRAFT_2020_12,
        "title": title,
        "description": format!(
            "A save at version {version} as the game reads it, in its canonical text or its \
             decimal view (docs/FORMAT.md). Made by savechain from the shape recorded for \
             version {version}: a member not described here is one the game does not read, \
             and would drop when it saves."
        ),
        "type": "object",
        "required": ["data", "meta"],
        "additionalProperties": false,
        "properties": {
            "data": data,
            "meta": meta_schema(game, version),
        },
        "$defs": defs.finish(),
    });
    if !checks.is_empty() {
        root["allOf"] = Json::Array(checks);
    }
    root
}

/// `data`: the game's shape; an object without a `mods` member still allows one, where
/// mods keep their data.
fn data_schema(defs: &mut Defs, shape: &Shape) -> Json {
    let mut schema = schema_of(defs, shape);
    if let Shape::Object(object) = shape {
        if !object.members.contains_key("mods") {
            schema["properties"]["mods"] = json!({
                "type": "object",
                "description": "each mod's data, under its name; checked by the mod's own \
                                shape at the version meta.mods.<name>.version records",
            });
        }
    }
    described(schema, "the game's data")
}

fn meta_schema(game: Option<&str>, version: u64) -> Json {
    let game_words = match game {
        Some(game) => format!("the game the save belongs to, exactly (\"{game}\")"),
        None => "the game the save belongs to".to_string(),
    };
    json!({
        "type": "object",
        "description": "what the save says of itself (docs/FORMAT.md, section 2); \
                        members not listed here are kept as they are",
        "required": ["version"],
        "properties": {
            "version": {
                "type": "integer",
                "const": version,
                "description": format!(
                    "the version of the save's data: this schema is of version {version} only"
                ),
            },
            "writer": {
                "type": "string",
                "pattern": SEMVER,
                "description": "the release of the game that wrote the save, a semantic \
                                version (\"1.4.0\")",
            },
            "game": {"type": "string", "description": game_words},
            "history": {
                "type": "array",
                "items": {"type": "object"},
                "description": "written by upgrades: one entry per upgrade, oldest first",
            },
            "mods": {
                "type": "object",
                "description": "the version of each mod's data, by the mod's name",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "version": int_schema(IntRange::U64),
                        "writer": {"type": "string", "pattern": SEMVER},
                    },
                },
            },
        },
    })
}

/// `data.mods.<name>` checked by the mod's shape when the save records its data at
/// `version`.
fn mod_check(defs: &mut Defs, name: &str, version: u64, shape: &Shape) -> Json {
    let recorded = json!({
        "required": ["meta"],
        "properties": {"meta": {
            "required": ["mods"],
            "properties": {"mods": {
                "required": [name],
                "properties": {name: {
                    "required": ["version"],
                    "properties": {"version": {"const": version}},
                }},
            }},
        }},
    });
    let data = described(
        schema_of(defs, shape),
        &format!("the data of mod {name} at version {version}"),
    );
    json!({
        "if": recorded,
        "then": {"properties": {"data": {"properties": {"mods": {"properties": {name: data}}}}}},
    })
}

/// The schemas a save's schema refers to: the fixed ones, and each array's plain spelling,
/// which both its spellings refer to (written twice, nested arrays would double the
/// schema's size at each level).
#[derive(Default)]
struct Defs {
    /// Each plain array schema, by its text, and the name it has in `$defs`.
    arrays: std::collections::BTreeMap<String, (String, Json)>,
}

impl Defs {
    /// A reference to `plain` in `$defs`, named `array<N>` in the order they are first
    /// met, one name for equal schemas.
    fn array(&mut self, plain: Json) -> Json {
        let text = plain.to_string();
        let next = self.arrays.len() + 1;
        let (name, _) = self
            .arrays
            .entry(text)
            .or_insert_with(|| (format!("array{next}"), plain));
        reference(name)
    }

    fn finish(self) -> Json {
        let mut defs = fixed_defs();
        for (_, (name, plain)) in self.arrays {
            defs[name] = plain;
        }
        defs
    }
}

/// The schemas every save's schema refers to.
fn fixed_defs() -> Json {
    let tag = |letter: Json, second: Json| {
        json!({
            "type": "array",
            "minItems": 2,
            "maxItems": 2,
            "prefixItems": [letter, second],
        })
    };
    json!({
        "double": {
            "description": "a double: a number, [\"d\", \"<hexfloat>\"] or [\"d\", <number>]",
            "anyOf": [
                {"type": "number"},
                tag(json!({"const": "d"}), json!({"anyOf": [
                    {"type": "number"},
                    {"type": "string", "pattern": DOUBLE_SPELLING},
                ]})),
            ],
        },
        "bytes": {
            "description": "a byte string: [\"b\", \"<one character per byte>\"]",
            "allOf": [tag(
                json!({"const": "b"}),
                json!({"type": "string", "pattern": BYTE_CHARACTERS}),
            )],
        },
        "lua_table": {
            "description": "a Lua table tag: [\"t\", ...], [\"s\", ...], [\"r\", ...] or [\"c\", ...]",
            "allOf": [tag(json!({"enum": ["c", "r", "s", "t"]}), json!({"type": "array"}))],
        },
        // An array a reader takes for a tag (FORMAT.md, 3.4): its plain spelling is not
        // an array, so an array of values that could look like one is escaped.
        "tag": {
            "description": "an array that reads as a tag, not as an array",
            "allOf": [tag(json!({"type": "string", "pattern": "^[a-z]$"}), json!(true))],
            "anyOf": [
                {"prefixItems": [{"enum": ["b", "d"]}]},
                {"prefixItems": [true, {"type": ["array", "object"]}]},
                {"prefixItems": [true, {"type": "number", "not": {"type": "integer"}}]},
            ],
        },
    })
}

fn reference(name: &str) -> Json {
    json!({"$ref": format!("#/$defs/{name}")})
}

/// The schema of one value of `shape`.
fn schema_of(defs: &mut Defs, shape: &Shape) -> Json {
    match shape {
        Shape::Any => Json::Bool(true),
        Shape::Null => json!({"type": "null"}),
        Shape::Bool => json!({"type": "boolean"}),
        Shape::Int(range) => int_schema(*range),
        Shape::Double => reference("double"),
        Shape::String => json!({"type": "string"}),
        Shape::Bytes => reference("bytes"),
        Shape::LuaTable => reference("lua_table"),
        Shape::Strings(words) => json!({"enum": words}),
        Shape::Array(items) => {
            let plain = json!({"type": "array", "items": schema_of(defs, items)});
            array_spellings(defs.array(plain), may_be_letter(items))
        }
        Shape::Tuple(items) => {
            let plain = json!({
                "type": "array",
                "prefixItems": items.iter().map(|s| schema_of(defs, s)).collect::<Vec<_>>(),
                "minItems": items.len(),
                "maxItems": items.len(),
            });
            let may_be_tag = items.len() == 2 && may_be_letter(&items[0]);
            array_spellings(defs.array(plain), may_be_tag)
        }
        Shape::Map(values) => json!({
            "type": "object",
            "additionalProperties": schema_of(defs, values),
        }),
        Shape::Object(object) => object_schema(defs, object),
        Shape::Nullable(inner) => json!({"anyOf": [{"type": "null"}, schema_of(defs, inner)]}),
        Shape::OneOf(shapes) => {
            json!({"anyOf": shapes.iter().map(|s| schema_of(defs, s)).collect::<Vec<_>>()})
        }
    }
}

/// An integer in `range`, cut to the integers a save can hold (-2^63 to 2^64-1): a plain
/// integer beyond them does not load.
fn int_schema(range: IntRange) -> Json {
    let min = range.min.clamp(i64::MIN as i128, u64::MAX as i128);
    let max = range.max.clamp(i64::MIN as i128, u64::MAX as i128);
    json!({"type": "integer", "minimum": exact(min), "maximum": exact(max)})
}

/// `n`, within -2^63..2^64-1, as an exact JSON integer.
fn exact(n: i128) -> Json {
    match i64::try_from(n) {
        Ok(n) => Json::from(n),
        Err(_) => Json::from(u64::try_from(n).expect("clamped to the range of a save")),
    }
}

/// An array written plainly, or escaped as `["a", [...]]`, which a reader always takes
/// literally. When the plain spelling could be a two-element array starting with a
/// one-letter string, those that read as a tag are left out of it: such an array is
/// written escaped.
fn array_spellings(plain: Json, may_be_tag: bool) -> Json {
    let escaped = json!({
        "type": "array",
        "minItems": 2,
        "maxItems": 2,
        "prefixItems": [{"const": "a"}, plain],
    });
    let plain = escaped["prefixItems"][1].clone();
    let plain = if may_be_tag {
        let mut plain = plain;
        plain["not"] = reference("tag");
        plain
    } else {
        plain
    };
    json!({"anyOf": [plain, escaped]})
}

/// Whether a value of `shape` may be a string of one lowercase letter, the first element
/// of a tag.
fn may_be_letter(shape: &Shape) -> bool {
    match shape {
        Shape::Any | Shape::String => true,
        Shape::Strings(words) => words
            .iter()
            .any(|w| w.len() == 1 && w.as_bytes()[0].is_ascii_lowercase()),
        Shape::Nullable(inner) => may_be_letter(inner),
        Shape::OneOf(shapes) => shapes.iter().any(may_be_letter),
        _ => false,
    }
}

fn object_schema(defs: &mut Defs, object: &Object) -> Json {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, member) in &object.members {
        let words = member.shape.describe();
        let words = if member.required {
            required.push(Json::String(name.clone()));
            words
        } else {
            format!("{words} (may be left out)")
        };
        properties.insert(
            name.clone(),
            described(schema_of(defs, &member.shape), &words),
        );
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// `schema` with a `description` (`true`, any value, becomes `{"description": ...}`).
fn described(schema: Json, words: &str) -> Json {
    let mut schema = match schema {
        Json::Bool(true) => json!({}),
        other => other,
    };
    if let Json::Object(object) = &mut schema {
        object.insert("description".into(), Json::String(words.to_string()));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Shape {
        text.parse().unwrap()
    }

    fn one(shape: &Shape) -> Json {
        schema_of(&mut Defs::default(), shape)
    }

    #[test]
    fn nested_arrays_refer_to_their_plain_spelling_instead_of_copying_it() {
        let mut deep = Shape::Bool;
        for _ in 0..40 {
            deep = Shape::Array(Box::new(deep));
        }
        let schema = json_schema(None, &deep, 1, &[]);
        assert!(schema.to_string().len() < 20_000);
        let defs = &schema["$defs"];
        assert_eq!(
            defs["array1"],
            json!({"type": "array", "items": {"type": "boolean"}})
        );
        assert_eq!(
            defs["array40"]["items"]["anyOf"][0],
            json!({"$ref": "#/$defs/array39"})
        );
        // Equal arrays share one definition.
        let twice = shape(r#"{"object": {"a": {"array": "u8"}, "b": {"array": "u8"}}}"#);
        let schema = json_schema(None, &twice, 1, &[]);
        assert!(schema["$defs"].get("array2").is_none());
    }

    #[test]
    fn the_envelope_is_closed_and_meta_holds_the_version() {
        let schema = json_schema(None, &shape("\"any\""), 7, &[]);
        assert_eq!(schema["$schema"], DRAFT_2020_12);
        assert_eq!(schema["title"], "Save, version 7");
        assert_eq!(schema["required"], json!(["data", "meta"]));
        assert_eq!(schema["additionalProperties"], false);
        let meta = &schema["properties"]["meta"];
        assert_eq!(meta["required"], json!(["version"]));
        assert_eq!(meta["properties"]["version"]["const"], 7);
        // Other members of meta are kept by every reader: allowed.
        assert!(meta.get("additionalProperties").is_none());
        // `any` data: only a description.
        assert_eq!(
            schema["properties"]["data"],
            json!({"description": "the game's data"})
        );
        assert!(schema.get("allOf").is_none());
    }

    #[test]
    fn objects_are_closed_with_required_members_and_descriptions() {
        let schema = one(&shape(
            r#"{"object": {"crew": "u32", "name": {"optional": {"nullable": "string"}}}}"#,
        ));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["crew"]));
        assert_eq!(
            schema["properties"]["crew"],
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32,
                   "description": "an integer from 0 to 4294967295"})
        );
        assert_eq!(
            schema["properties"]["name"]["description"],
            "null or text (may be left out)"
        );
        assert_eq!(
            schema["properties"]["name"]["anyOf"],
            json!([{"type": "null"}, {"type": "string"}])
        );
    }

    #[test]
    fn integer_bounds_are_exact_and_cut_to_what_a_save_holds() {
        assert_eq!(
            int_schema(IntRange::U64),
            json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
        );
        assert_eq!(
            int_schema(IntRange::I64),
            json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
        );
        let text =
            serde_json::to_string(&int_schema(IntRange::new(-(1 << 100), 1 << 100))).unwrap();
        assert_eq!(
            text,
            r#"{"maximum":18446744073709551615,"minimum":-9223372036854775808,"type":"integer"}"#
        );
    }

    #[test]
    fn kinds_refer_to_their_spellings() {
        assert_eq!(one(&Shape::Double), json!({"$ref": "#/$defs/double"}));
        assert_eq!(one(&Shape::Bytes), json!({"$ref": "#/$defs/bytes"}));
        assert_eq!(one(&Shape::LuaTable), json!({"$ref": "#/$defs/lua_table"}));
        assert_eq!(one(&Shape::Any), json!(true));
        assert_eq!(
            one(&shape(r#"{"enum": ["cadet", "captain"]}"#)),
            json!({"enum": ["cadet", "captain"]})
        );
        let defs = fixed_defs();
        for name in ["double", "bytes", "lua_table", "tag"] {
            assert!(defs[name]["description"].is_string(), "{name}");
        }
    }

    #[test]
    fn arrays_take_both_spellings_and_leave_out_tags_only_where_they_could_be_one() {
        let of_numbers = one(&shape(r#"{"array": "u8"}"#));
        let spellings = of_numbers["anyOf"].as_array().unwrap();
        assert_eq!(spellings.len(), 2);
        assert!(spellings[0].get("not").is_none());
        assert_eq!(spellings[1]["prefixItems"][0], json!({"const": "a"}));
        assert_eq!(spellings[1]["prefixItems"][1], spellings[0]);

        for text in [
            r#"{"array": "string"}"#,
            r#"{"array": "any"}"#,
            r#"{"array": {"enum": ["x", "long"]}}"#,
            r#"{"array": {"nullable": {"one_of": ["u8", "string"]}}}"#,
            r#"{"tuple": ["string", "double"]}"#,
        ] {
            let schema = one(&shape(text));
            assert_eq!(
                schema["anyOf"][0]["not"],
                json!({"$ref": "#/$defs/tag"}),
                "{text}"
            );
        }
        for text in [
            r#"{"array": {"enum": ["long", "words"]}}"#,
            r#"{"tuple": ["string", "double", "u8"]}"#,
            r#"{"tuple": ["u8", "string"]}"#,
        ] {
            let schema = one(&shape(text));
            assert!(schema["anyOf"][0].get("not").is_none(), "{text}");
        }
    }

    #[test]
    fn game_data_allows_mods_and_each_mod_is_checked_at_its_version() {
        let game = shape(r#"{"object": {"ship": "string"}}"#);
        let chart = shape(r#"{"object": {"notes": {"array": "string"}}}"#);
        let schema = json_schema(
            Some("Starlane Traders"),
            &game,
            9,
            &[("cartographer", 2, &chart)],
        );
        let data = &schema["properties"]["data"];
        assert_eq!(data["properties"]["mods"]["type"], "object");
        assert_eq!(data["required"], json!(["ship"]));
        let check = &schema["allOf"][0];
        assert_eq!(
            check["if"]["properties"]["meta"]["properties"]["mods"]["properties"]["cartographer"]
                ["properties"]["version"],
            json!({"const": 2})
        );
        let mod_data = &check["then"]["properties"]["data"]["properties"]["mods"]["properties"]
            ["cartographer"];
        assert_eq!(mod_data["required"], json!(["notes"]));
        assert_eq!(
            mod_data["description"],
            "the data of mod cartographer at version 2"
        );

        // A game that reads `mods` itself keeps its own shape there.
        let game = shape(r#"{"object": {"mods": {"map": "u8"}}}"#);
        let schema = json_schema(None, &game, 1, &[]);
        assert_eq!(
            schema["properties"]["data"]["properties"]["mods"]["additionalProperties"],
            json!({"type": "integer", "minimum": 0, "maximum": 255})
        );
    }

    #[test]
    fn a_mod_given_at_two_versions_is_checked_at_each() {
        let v1 = shape(r#"{"object": {"notes": {"array": "string"}}}"#);
        let v2 = shape(r#"{"object": {"notes": {"map": "string"}}}"#);
        let game = shape("\"any\"");
        let schema = json_schema(None, &game, 4, &[("chart", 1, &v1), ("chart", 2, &v2)]);
        let checks = schema["allOf"].as_array().unwrap();
        assert_eq!(checks.len(), 2);
        for (check, version) in checks.iter().zip([1, 2]) {
            let entry =
                &check["if"]["properties"]["meta"]["properties"]["mods"]["properties"]["chart"];
            assert_eq!(entry["properties"]["version"]["const"], version);
            assert_eq!(entry["required"], json!(["version"]));
        }
    }

    #[test]
    fn the_same_shape_gives_the_same_text() {
        let text = r#"{"object": {"b": "double", "a": {"map": {"tuple": ["string", "i8"]}},
                       "c": {"one_of": ["bytes", "lua-table"]}}}"#;
        let first = serde_json::to_string_pretty(&json_schema(None, &shape(text), 3, &[])).unwrap();
        let again = serde_json::to_string_pretty(&json_schema(None, &shape(text), 3, &[])).unwrap();
        assert_eq!(first, again);
        // Keys sorted: "a" before "b" before "c" in the data's properties.
        let a = first.find("\"a\": {").unwrap();
        let b = first.find("\"b\": {").unwrap();
        assert!(a < b);
    }
}
