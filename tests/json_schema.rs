//! The JSON Schema of a save (`savechain::shape::json_schema`) checked by a validator not
//! written here, Python's `jsonschema` (tests/support/validate_schema.py): saves the game
//! reads, in canonical text, in the decimal view and typed by hand, are valid; saves with
//! each kind of mistake are not.
//!
//! Needs `python3` and its `jsonschema` package (Debian `python3-jsonschema`, or
//! `pip install jsonschema`): without them the test fails saying so.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use savechain::shape::{json_schema, Shape};
use savechain::text::Style;
use savechain::{Meta, Save};
use serde_json::{json, Value as Json};

/// What the game reads at version 9, every kind of shape somewhere in it.
const GAME: &str = r#"{"object": {
    "hull": "double",
    "crew": "u32",
    "credits": "u64",
    "debt": "i64",
    "name": "string",
    "badge": "bytes",
    "docked": "bool",
    "rank": {"enum": ["cadet", "captain"]},
    "position": {"tuple": ["double", "double", "double"]},
    "tags": {"array": "string"},
    "labels": {"array": "string"},
    "systems": {"map": {"object": {"x": "double", "moons": {"optional": "u8"}}}},
    "cargo": {"array": {"object": {
        "good": "string",
        "qty": "u32",
        "note": {"optional": {"nullable": "string"}}
    }}},
    "lua": "lua-table",
    "anything": "any",
    "pair": {"tuple": ["string", "i8"]},
    "choice": {"one_of": ["u8", {"object": {"Named": "string"}}]},
    "escort": {"optional": {"object": {
        "name": "string",
        "wing": {"optional": {"object": {"lead": "string"}}}
    }}},
    "home": {"nullable": "string"}
}}"#;

/// What the mod `cartographer` reads at its version 2.
const CARTOGRAPHER: &str =
    r#"{"object": {"waypoints": {"array": {"tuple": ["double", "double"]}}}}"#;

/// A save of version 9 as the game writes it, typed here in canonical spellings (the
/// escapes of tag-like arrays included) and with the extremes of each kind.
const SAVE: &str = r#"{
  "data": {
    "anything": ["a", ["x", [1]]],
    "badge": ["b", "a\u0000b\u00ff"],
    "cargo": [{"good": "ore", "note": null, "qty": 3}, {"good": "tea", "qty": 0}],
    "choice": {"Named": "x"},
    "credits": 18446744073709551615,
    "crew": 4294967295,
    "debt": -9223372036854775808,
    "docked": true,
    "escort": {"name": "Kestrel"},
    "home": null,
    "hull": ["d", "0x1.ee147ae147ae1p-1"],
    "labels": ["x", "y"],
    "lua": ["t", [[1, "a"], [["d", "0x1.8p+0"], "b"]]],
    "mods": {"cartographer": {"waypoints": [[["d", "0x1p+0"], 2], [["d", "-0x1.8p+1"], ["d", "0x1.999999999999ap-4"]]]}},
    "name": "Zoë",
    "pair": ["a", ["b", 5]],
    "position": [["d", "-0x0p+0"], ["d", "inf"], ["d", "-nan:0x8000000000001"]],
    "rank": "cadet",
    "systems": {"sol": {"x": 0}, "tau ceti": {"moons": 3, "x": ["d", "0x1.8p+1"]}},
    "tags": ["a", ["d", "0x1p+0"]]
  },
  "meta": {
    "game": "Starlane Traders",
    "history": [{"from": 8, "to": 9, "writer": "2.3.0"}],
    "mods": {"cartographer": {"version": 2, "writer": "1.0.0"}},
    "version": 9,
    "writer": "2.3.0"
  }
}"#;

/// The same save as a person might type it: doubles as plain numbers and in `d` tags
/// with decimals, an array escaped that needs no escape.
const TYPED_BY_HAND: &str = r#"{
  "data": {
    "anything": {"free": [1, "form"]},
    "badge": ["b", ""],
    "cargo": [],
    "choice": 7,
    "credits": 0,
    "crew": 0,
    "debt": 9223372036854775807,
    "docked": false,
    "escort": {"name": "Kestrel", "wing": {"lead": "Vega"}},
    "home": "Sol",
    "hull": 0.965,
    "labels": ["a", ["long", "words"]],
    "lua": ["c", ["Ship", {"hull": 3}]],
    "name": "",
    "pair": ["longer", -128],
    "position": [1.5, ["d", -0.0], ["d", 1e300]],
    "rank": "captain",
    "systems": {},
    "tags": [],
    "mods": {"cartographer": {"waypoints": [[["d", 100], -2.5e-3]]}}
  },
  "meta": {"version": 9, "mods": {"cartographer": {"version": 2}}, "slot": 4}
}"#;

fn shape(text: &str) -> Shape {
    text.parse().expect("a shape")
}

/// The save text with `change` made to its JSON.
fn changed(base: &Json, change: impl FnOnce(&mut Json)) -> String {
    let mut save = base.clone();
    change(&mut save);
    serde_json::to_string_pretty(&save).unwrap()
}

/// Validates each save with the script, returning each one's verdict line.
fn verdicts(dir: &Path, schema: &Json, saves: &[(&str, String)]) -> Vec<String> {
    let schema_path = dir.join("schema.json");
    std::fs::write(&schema_path, serde_json::to_string_pretty(schema).unwrap()).unwrap();
    let mut command = Command::new("python3");
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/validate_schema.py"))
        .arg(&schema_path);
    for (name, text) in saves {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        command.arg(path);
    }
    let output = command.output().unwrap_or_else(|e| {
        panic!(
            "this test runs python3 with its jsonschema package, and python3 could not be \
             started ({e}): install python3 and python3-jsonschema (or `pip install \
             --break-system-packages jsonschema`)"
        )
    });
    assert!(
        output.status.success(),
        "the validator failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), saves.len(), "one verdict per save: {stdout}");
    lines
}

/// Checks every save's verdict against what is expected of it, listing each that differs.
fn expect(dir: &Path, schema: &Json, valid: &[(&str, String)], invalid: &[(&str, String)]) {
    let all: Vec<(&str, String)> = valid.iter().chain(invalid).cloned().collect();
    let lines = verdicts(dir, schema, &all);
    let mut wrong = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let should_be_valid = i < valid.len();
        let name = all[i].0;
        assert!(line.starts_with(&format!("{name}.json\t")), "{line}");
        let is_valid = line.ends_with("\tvalid");
        if is_valid != should_be_valid {
            let expected = if should_be_valid { "valid" } else { "invalid" };
            wrong.push(format!("{name}: expected {expected}, got {line}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn saves_the_game_reads_are_valid_and_each_mistake_is_not() {
    let game = shape(GAME);
    let cartographer = shape(CARTOGRAPHER);
    let schema = json_schema(
        Some("Starlane Traders"),
        &game,
        9,
        &[("cartographer", 2, &cartographer)],
    );

    let save = Save::from_str(SAVE).expect("the save loads");
    let canonical = save.to_string().unwrap();
    let mut decimal = Vec::new();
    save.write(&mut decimal, Style::Decimal).unwrap();
    let decimal = String::from_utf8(decimal).unwrap();
    // The two spellings differ where they should, so both are put to the validator.
    assert!(canonical.contains(r#""hull": ["d", "0x1.ee147ae147ae1p-1"]"#));
    assert!(decimal.contains(r#""hull": ["d", 0.965]"#), "{decimal}");
    assert!(canonical.contains(r#""tags": ["a", ["#), "{canonical}");
    assert!(canonical.contains(r#""pair": ["a", ["#), "{canonical}");

    let base: Json = serde_json::from_str(&canonical).unwrap();
    let other_mod_version = changed(&base, |s| {
        s["meta"]["mods"]["cartographer"]["version"] = json!(1);
        s["data"]["mods"]["cartographer"] = json!({"notes": "a version the schema is not of"});
    });
    let uninstalled_mod = changed(&base, |s| {
        s["data"]["mods"]["radio"] = json!({"station": "KSTL"});
        s["meta"]["mods"]["radio"] = json!({"version": 1});
    });
    let valid = [
        ("canonical", canonical.clone()),
        ("decimal_view", decimal),
        ("typed_by_hand", TYPED_BY_HAND.to_string()),
        ("other_mod_version", other_mod_version),
        ("uninstalled_mod", uninstalled_mod),
    ];
    // Every save called valid is one the library loads.
    for (name, text) in &valid {
        Save::from_str(text).unwrap_or_else(|e| panic!("{name} does not load: {e}"));
    }

    // Sets (or adds) the member at `pointer`.
    let set = |pointer: &'static str, value: Json| {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        changed(&base, move |s| match s.pointer_mut(parent).unwrap() {
            Json::Object(members) => {
                members.insert(key.to_string(), value);
            }
            other => other[key.parse::<usize>().unwrap()] = value,
        })
    };
    let remove = |pointer: &'static str| {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        changed(&base, move |s| {
            s.pointer_mut(parent)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove(key)
                .unwrap();
        })
    };
    let invalid = [
        ("double_as_text", set("/data/hull", json!("fast"))),
        (
            "double_bad_spelling",
            set("/data/hull", json!(["d", "1.5"])),
        ),
        ("int_as_double", set("/data/crew", json!(3.5))),
        (
            "int_as_tagged_double",
            set("/data/crew", json!(["d", "0x1p+0"])),
        ),
        ("int_above_u32", set("/data/crew", json!(4294967296u64))),
        ("int_below_zero", set("/data/crew", json!(-1))),
        (
            "int_above_u64",
            canonical.replace("18446744073709551615", "18446744073709551616"),
        ),
        (
            "int_below_i64",
            canonical.replace("-9223372036854775808", "-9223372036854775809"),
        ),
        ("int_out_of_i8", set("/data/pair", json!(["x", 300]))),
        ("text_as_int", set("/data/name", json!(5))),
        ("bytes_as_text", set("/data/badge", json!("abc"))),
        ("bool_as_text", set("/data/docked", json!("yes"))),
        ("enum_unknown_word", set("/data/rank", json!("admiral"))),
        ("tuple_too_short", set("/data/position", json!([1.5, 2.5]))),
        // Unescaped, the two strings read as the double 1.0, not an array.
        (
            "tag_like_array_unescaped",
            set("/data/tags", json!(["d", "0x1p+0"])),
        ),
        ("lua_table_as_object", set("/data/lua", json!({"a": 1}))),
        ("one_of_none", set("/data/choice", json!("x"))),
        (
            "map_value_extra_member",
            set("/data/systems/sol", json!({"x": 1, "y": 2})),
        ),
        ("extra_member", set("/data/nick", json!("x"))),
        ("required_missing", remove("/data/cargo/1/qty")),
        ("nullable_missing", remove("/data/home")),
        (
            "nested_optional_incomplete",
            set("/data/escort/wing", json!({})),
        ),
        ("array_of_wrong_kind", set("/data/labels", json!([1, 2]))),
        ("wrong_version", set("/meta/version", json!(8))),
        ("writer_not_semver", set("/meta/writer", json!("1.3"))),
        ("envelope_extra_member", set("/extra", json!(1))),
        ("meta_missing", remove("/meta")),
        (
            "mod_data_wrong_kind",
            set("/data/mods/cartographer/waypoints", json!([[1]])),
        ),
    ];

    let dir = tempfile::tempdir().unwrap();
    expect(dir.path(), &schema, &valid, &invalid);
}

#[test]
fn any_data_and_a_game_without_mods_still_validate_what_loads() {
    let schema = json_schema(None, &shape("\"any\""), 1, &[]);
    let valid = [
        (
            "anything",
            r#"{"data": [["d", "nan"], ["b", ""], ["t", []], null], "meta": {"version": 1}}"#
                .to_string(),
        ),
        (
            "number",
            r#"{"data": 3, "meta": {"version": 1, "writer": "0.1.0-beta.2+b7"}}"#.to_string(),
        ),
    ];
    let invalid = [(
        "wrong_version",
        r#"{"data": 3, "meta": {"version": 2}}"#.to_string(),
    )];
    let dir = tempfile::tempdir().unwrap();
    expect(dir.path(), &schema, &valid, &invalid);
}

/// The shapes recorded in a steps folder's `shapes/` (`NNNN.json`: `{"data": S,
/// "savechain_shape": 1, "version": N}`), by version.
fn recorded(steps: &Path) -> BTreeMap<u64, Shape> {
    let mut shapes = BTreeMap::new();
    let Ok(entries) = fs::read_dir(steps.join("shapes")) else {
        return shapes;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let file: Json = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            let version = file["version"].as_u64().expect("a version");
            let shape = Shape::from_json(&file["data"])
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            shapes.insert(version, shape);
        }
    }
    shapes
}

/// The saves in each `vN` folder of `dir`.
fn saves_under(dir: &Path) -> Vec<PathBuf> {
    let mut saves = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let folder = entry.unwrap().path();
        if folder.is_dir() {
            for save in fs::read_dir(&folder).unwrap() {
                let save = save.unwrap().path();
                if save.extension().is_some_and(|e| e == "json") {
                    saves.push(save);
                }
            }
        }
    }
    saves.sort();
    saves
}

/// The first place, through required members of objects, where `shape` reads a value
/// `wanted` picks, as a JSON pointer below `data`.
fn first_place(shape: &Shape, wanted: &Picks, at: String) -> Option<String> {
    if wanted(shape) {
        return Some(at);
    }
    match shape {
        Shape::Object(object) => object
            .members
            .iter()
            .filter(|(_, member)| member.required)
            .find_map(|(name, member)| first_place(&member.shape, wanted, format!("{at}/{name}"))),
        _ => None,
    }
}

/// Which shapes a search looks for.
type Picks = dyn Fn(&Shape) -> bool;

/// Broken copies of `save` (JSON of a save the game reads as `shape`): an extra member, a
/// required member missing, a value of the wrong kind where the game reads an integer, a
/// double and text, another version.
fn broken(name: &str, save: &Json, shape: &Shape, version: u64) -> Vec<(String, String)> {
    let mut broken = Vec::new();
    let mut add = |what: &str, change: &dyn Fn(&mut Json)| {
        let mut copy = save.clone();
        change(&mut copy);
        broken.push((
            format!("{name}-{what}"),
            serde_json::to_string_pretty(&copy).unwrap(),
        ));
    };
    add("wrong_version", &|s| {
        s["meta"]["version"] = json!(version + 1)
    });
    if let Shape::Object(object) = shape {
        add("extra_member", &|s| {
            s["data"]["not_read_by_the_game"] = json!(1);
        });
        if let Some((member, _)) = object.members.iter().find(|(_, m)| m.required) {
            add("required_missing", &|s| {
                s["data"].as_object_mut().unwrap().remove(member);
            });
        }
    }
    let kinds: [(&str, &Picks, Json); 3] = [
        (
            "double_for_integer",
            &|s| matches!(s, Shape::Int(_)),
            json!(3.5),
        ),
        ("text_for_double", &|s| *s == Shape::Double, json!("fast")),
        ("integer_for_text", &|s| *s == Shape::String, json!(5)),
    ];
    for (what, wanted, value) in kinds {
        if let Some(place) = first_place(shape, wanted, "/data".into()) {
            if save.pointer(&place).is_some() {
                add(what, &|s| *s.pointer_mut(&place).unwrap() = value.clone());
            }
        }
    }
    broken
}

/// FORMAT.md's promise for the example game: every fixture and every `expected/` save,
/// the mod's too, is valid against the schema of its version made from the recorded
/// shapes; broken copies are not.
#[test]
fn every_fixture_and_expected_save_is_valid_against_its_version_s_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let game = recorded(&root.join("upgrades"));
    assert!(
        !game.is_empty(),
        "the example game records no shape in upgrades/shapes/ (issue 29): record one per \
         version (save-upgrade shape record fixtures/vN/*.json)"
    );
    let chart = recorded(&root.join("mods/cartographer"));
    let mods: Vec<(&str, u64, &Shape)> = chart
        .iter()
        .map(|(version, shape)| ("cartographer", *version, shape))
        .collect();

    let mut by_version: BTreeMap<u64, Vec<PathBuf>> = BTreeMap::new();
    for dir in [
        "fixtures",
        "expected",
        "mods/cartographer/fixtures",
        "mods/cartographer/expected",
    ] {
        for save in saves_under(&root.join(dir)) {
            let meta = Meta::from_slice(&fs::read(&save).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", save.display()));
            by_version.entry(meta.version).or_default().push(save);
        }
    }
    for (version, saves) in by_version {
        let shape = game.get(&version).unwrap_or_else(|| {
            panic!("saves of version {version} ({saves:?}) and no shape recorded for it")
        });
        let schema = json_schema(Some("Starlane Traders"), shape, version, &mods);
        let named = |save: &PathBuf| {
            let relative = save.strip_prefix(root).unwrap().with_extension("");
            relative.to_string_lossy().replace('/', "-")
        };
        let valid: Vec<(String, String)> = saves
            .iter()
            .map(|save| (named(save), fs::read_to_string(save).unwrap()))
            .collect();
        let first: Json = serde_json::from_str(&valid[0].1).unwrap();
        let invalid = broken(&valid[0].0, &first, shape, version);
        let valid: Vec<(&str, String)> =
            valid.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        let invalid: Vec<(&str, String)> = invalid
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        expect(dir.path(), &schema, &valid, &invalid);
    }
}
