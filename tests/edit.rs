//! A save changed by hand through the library: values by path, differences, and an edited
//! save written back with its backup.

mod common;

use common::any_value;
use proptest::prelude::*;
use savechain::text::Style;
use savechain::{edit, ErrorKind, Save, Value};

const SAVE: &str = r#"{"meta": {"version": 3, "writer": "1.2.0"},
    "data": {"ship": {"hull": ["d", "0x1.ee147ae147ae1p-1"], "crew": 3,
             "cargo": [{"mass": ["d", "0x1.4p+1"]}]},
             "player": {"name": "Wren"}}}"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn setting_an_unrelated_path_in_the_decimal_view_changes_nothing_else(
        data in any_value(),
        version in any::<u64>(),
    ) {
        let mut document = savechain::Map::new();
        document.insert("kept", data);
        let save = Save::new(version, Value::Object(document));
        let mut view = Vec::new();
        save.write(&mut view, Style::Decimal).unwrap();
        let mut edited = Save::from_slice(&view).unwrap();
        edit::set(&mut edited, "data.note", Value::from("fixed by hand")).unwrap();
        prop_assert_eq!(edited.data["kept"].clone(), save.data["kept"].clone());
        edited.data.as_object_mut().unwrap().remove("note");
        prop_assert_eq!(edited.to_vec().unwrap(), save.to_vec().unwrap());
    }
}

#[test]
fn values_are_read_and_set_by_their_paths() {
    let mut save = Save::from_str(SAVE).unwrap();
    assert_eq!(
        edit::get(&save, "data.ship.cargo[0].mass").unwrap(),
        Some(Value::Double(2.5))
    );
    assert_eq!(
        edit::get(&save, "meta.writer").unwrap(),
        Some(Value::from("1.2.0"))
    );
    assert_eq!(edit::get(&save, "data.ship.shield").unwrap(), None);
    let err = edit::get(&save, "ship.hull").unwrap_err();
    assert!(
        err.to_string().contains("starts with data or meta"),
        "{err}"
    );
    let err = edit::get(&save, "data.ship[").unwrap_err();
    assert!(err.to_string().contains("is not a path"), "{err}");

    // A double stays a double; an integer stays an integer; a member may be added.
    let old = edit::set(&mut save, "data.ship.hull", Value::Int(100)).unwrap();
    assert_eq!(old, Some(Value::Double(0.965)));
    assert_eq!(save.data["ship"]["hull"], Value::Double(100.0));
    edit::set(&mut save, "data.ship.crew", Value::Int(4)).unwrap();
    assert_eq!(save.data["ship"]["crew"], Value::Int(4));
    assert_eq!(
        edit::set(&mut save, "data.player.credits", Value::Int(100_000)).unwrap(),
        None
    );
    edit::set(&mut save, "data.ship.cargo[0].mass", Value::Double(3.25)).unwrap();
    assert_eq!(save.data["ship"]["cargo"][0]["mass"], Value::Double(3.25));

    // What cannot be done exactly, or is not there, is refused and changes nothing.
    let before = save.clone();
    for (path, value, says) in [
        (
            "data.ship.hull",
            Value::Int((1 << 53) + 1),
            "is not one exactly",
        ),
        (
            "data.ship.cargo[1]",
            Value::Int(1),
            "the array has 1 elements",
        ),
        (
            "data.station.name",
            Value::from("x"),
            "nothing at data.station.name",
        ),
        ("data.ship.crew.size", Value::Int(1), "nothing at"),
        ("meta.version", Value::from("nine"), "version"),
    ] {
        let err = edit::set(&mut save, path, value).unwrap_err();
        assert!(err.to_string().contains(says), "{path}: {err}");
        assert_eq!(save, before, "{path}");
    }
    // meta stays a valid meta, and its fields are the save's.
    let versions = edit::Allow::default().with_version_change();
    edit::set_allowing(&mut save, "meta.version", Value::Int(5), versions).unwrap();
    assert_eq!(save.meta.version, 5);
    edit::set(&mut save, "meta.game", Value::from("Starlane Traders")).unwrap();
    assert_eq!(
        save.meta.extra.get("game"),
        Some(&Value::from("Starlane Traders"))
    );
}

#[test]
fn differences_are_listed_by_document_path_in_decimal() {
    let before = Save::from_str(SAVE).unwrap();
    // The same document in another key order and another spelling is the same save.
    let respelled = Save::from_str(
        r#"{"data": {"player": {"name": "Wren"}, "ship": {"crew": 3, "hull": ["d", 0.965],
            "cargo": [{"mass": 2.5}]}}, "meta": {"writer": "1.2.0", "version": 3}}"#,
    )
    .unwrap();
    assert!(edit::diff(&before, &respelled).is_empty());
    let mut after = before.clone();
    edit::set(&mut after, "data.ship.hull", Value::Double(0.5)).unwrap();
    let versions = edit::Allow::default().with_version_change();
    edit::set_allowing(&mut after, "meta.version", Value::Int(4), versions).unwrap();
    after.data["player"].as_object_mut().unwrap().remove("name");
    // -0.0 and 0.0 are different bits.
    edit::set(&mut after, "data.ship.cargo[0].mass", Value::Double(-0.0)).unwrap();
    let changes = edit::diff(&before, &after);
    let shown: Vec<String> = changes
        .changed
        .iter()
        .map(|c| format!("{} {:?} {:?}", c.path, c.before, c.after))
        .collect();
    assert_eq!(
        shown,
        [
            r#"data.ship.cargo[0].mass Some("[\"d\",2.5]") Some("[\"d\",-0.0]")"#,
            r#"data.ship.hull Some("[\"d\",0.965]") Some("[\"d\",0.5]")"#,
            r#"meta.version Some("3") Some("4")"#,
        ]
    );
    assert_eq!(changes.removed[0].path, "data.player.name");
    let mut zero = before.clone();
    edit::set(&mut zero, "data.ship.cargo[0].mass", Value::Double(0.0)).unwrap();
    assert_eq!(edit::diff(&zero, &after).changed.len(), 3);
}

#[test]
fn an_edited_save_replaces_the_file_it_was_read_from_with_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slot1.json");
    std::fs::write(&path, SAVE).unwrap();
    let read = std::fs::read(&path).unwrap();
    let mut save = Save::from_slice(&read).unwrap();
    edit::set(&mut save, "data.player.credits", Value::Int(100_000)).unwrap();
    let backup = edit::store_edited(&path, &read, &save).unwrap();
    assert_eq!(backup, dir.path().join("slot1.json.bak"));
    assert_eq!(std::fs::read(&backup).unwrap(), SAVE.as_bytes());
    assert_eq!(std::fs::read(&path).unwrap(), save.to_vec().unwrap());

    // A second edit keeps the first backup and makes another.
    let read2 = std::fs::read(&path).unwrap();
    edit::set(&mut save, "data.player.credits", Value::Int(5)).unwrap();
    let backup2 = edit::store_edited(&path, &read2, &save).unwrap();
    assert_eq!(backup2, dir.path().join("slot1.json.1.bak"));
    assert_eq!(std::fs::read(&backup).unwrap(), SAVE.as_bytes());
    assert_eq!(std::fs::read(&backup2).unwrap(), read2);

    // The game wrote the save meanwhile: nothing is written, no backup is made.
    let game = br#"{"meta": {"version": 3}, "data": {"newer": true}}"#;
    std::fs::write(&path, game).unwrap();
    let err = edit::store_edited(&path, &read2, &save).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Changed);
    assert!(err.to_string().contains("slot1.json"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), game);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn integers_typed_over_doubles_stay_doubles() {
    let original = Save::from_str(SAVE).unwrap();
    let mut edited = Save::from_str(
        r#"{"meta": {"version": 3, "writer": "1.2.0"},
        "data": {"ship": {"hull": 1, "crew": 4, "cargo": [{"mass": 9007199254740993}]},
                 "player": {"name": "Wren", "level": 2}}}"#,
    )
    .unwrap();
    edit::keep_doubles(&original, &mut edited);
    assert_eq!(edited.data["ship"]["hull"], Value::Double(1.0));
    // An integer where an integer was, or where nothing was, stays one; so does one no
    // double holds exactly.
    assert_eq!(edited.data["ship"]["crew"], Value::Int(4));
    assert_eq!(edited.data["player"]["level"], Value::Int(2));
    assert_eq!(
        edited.data["ship"]["cargo"][0]["mass"],
        Value::Int(9007199254740993)
    );
}

#[test]
fn set_existing_adds_nothing_and_names_the_nearest_key_and_the_missing_part() {
    let mut save = Save::from_str(SAVE).unwrap();
    let before = save.clone();
    for (path, says) in [
        (
            "data.ship.Hull",
            "data.ship has no member \"Hull\"; did you mean data.ship.hull?",
        ),
        ("data.ship.crw", "did you mean data.ship.crew?"),
        (
            "data.ship.engine",
            "data.ship has no member \"engine\" (a new member",
        ),
        (
            "data.station.name",
            "nothing at data.station.name: data.station is not there",
        ),
        ("data.ship.crew.size", "data.ship.crew is an integer"),
        ("data.ship.cargo.mass", "data.ship.cargo is an array"),
    ] {
        let err = edit::set_existing(&mut save, path, Value::Int(1)).unwrap_err();
        assert!(err.to_string().contains(says), "{path}: {err}");
        assert_eq!(save, before);
    }
    assert_eq!(
        edit::set_existing(&mut save, "data.ship.crew", Value::Int(5)).unwrap(),
        Value::Int(3)
    );
    // Doubles inside an array or object given in place of one are kept; in an array that
    // gained elements, places no longer match, and each record is held to the shape of
    // records that are all alike (a new cargo record's mass is a double as the others').
    edit::set(
        &mut save,
        "data.ship.cargo",
        savechain::text::from_str(r#"[{"mass": 4}, {"mass": 5}]"#).unwrap(),
    )
    .unwrap();
    assert_eq!(save.data["ship"]["cargo"][0]["mass"], Value::Double(4.0));
    assert_eq!(save.data["ship"]["cargo"][1]["mass"], Value::Double(5.0));
}

#[test]
fn a_change_of_kind_or_a_version_below_the_history_is_refused_unless_allowed() {
    let mut save = Save::from_str(
        r#"{"meta": {"version": 4, "history": [{"from": 1, "to": 4, "writer": "1.0.0"},
            {"mod": "tinker", "from": 1, "to": 3, "writer": "1.2.0"}],
            "mods": {"tinker": {"version": 3}}},
            "data": {"level": 3, "hull": ["d", 0.5]}}"#,
    )
    .unwrap();
    let before = save.clone();
    for (path, value, says) in [
        (
            "data.level",
            Value::Double(3.5),
            "data.level from an integer to a double",
        ),
        (
            "data.hull",
            Value::from("full"),
            "data.hull from a double to a string",
        ),
        (
            "meta.version",
            Value::Int(2),
            "meta.version would be 2, below version 4",
        ),
        (
            "meta.mods.tinker.version",
            Value::Int(1),
            "meta.mods.tinker.version would be 1, below version 3",
        ),
    ] {
        let err = edit::set(&mut save, path, value).unwrap_err();
        assert!(err.to_string().contains(says), "{path}: {err}");
        assert_eq!(save, before);
    }
    let kinds = edit::Allow::default().with_kind_change();
    edit::set_allowing(&mut save, "data.level", Value::Double(3.5), kinds).unwrap();
    let changes = edit::kind_changes(&before, &save);
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (
            changes[0].path.as_str(),
            changes[0].before,
            changes[0].after
        ),
        ("data.level", "an integer", "a double")
    );
    edit::set_allowing(&mut save, "data.level", Value::Int(3), kinds).unwrap();
    assert_eq!(save, before);

    // A whole edited save: an integer typed over a double stays one; kinds are refused
    // unless allowed, then taken as typed.
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("hull", Value::Int(1));
    assert!(
        edit::check_edit(&before, &mut edited, edit::Allow::default())
            .unwrap()
            .is_empty()
    );
    assert_eq!(edited.data["hull"], Value::Double(1.0));
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("hull", Value::from("full"));
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("level", Value::Null);
    let err = edit::check_edit(&before, &mut edited, edit::Allow::default()).unwrap_err();
    assert!(err.to_string().contains("the kind of 2 values"), "{err}");
    assert_eq!(
        edit::check_edit(&before, &mut edited, kinds).unwrap().len(),
        2
    );
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("hull", Value::Int(1));
    edit::check_edit(&before, &mut edited, kinds).unwrap();
    assert_eq!(edited.data["hull"], Value::Int(1));
    // A save read below its history may stay so.
    let mut low = before.clone();
    low.meta.version = 2;
    let mut edited = low.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("level", Value::Int(4));
    edit::check_edit(&low, &mut edited, edit::Allow::default()).unwrap();
}

/// An element added to or removed from an array moves the others: places no longer match,
/// so neither keeping doubles nor the kind check pairs elements by place there (from a
/// review: deleting the first of [1.5, 2, 3] wrote the integer 2 as the double 2.0).
#[test]
fn elements_added_or_removed_keep_their_own_kinds() {
    let before = Save::from_str(
        r#"{"meta": {"version": 1},
            "data": {"mixed": [["d", "0x1.8p+0"], 2, 3], "weights": [["d", "0x1.8p+0"], ["d", "0x1.4p+1"]],
                     "names": [1, "a"], "counts": [1, 2]}}"#,
    )
    .unwrap();
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("mixed", Value::Array(vec![Value::Int(2), Value::Int(3)]));
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("names", Value::Array(vec![Value::from("a")]));
    // A plain 2 typed in an array of doubles alone is a double, however many there are.
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("weights", Value::Array(vec![Value::Int(2)]));
    let changes = edit::check_edit(&before, &mut edited, edit::Allow::default()).unwrap();
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(
        edited.data["mixed"],
        Value::Array(vec![Value::Int(2), Value::Int(3)])
    );
    assert_eq!(
        edited.data["weights"],
        Value::Array(vec![Value::Double(2.0)])
    );
    // A kind the array never held is still a change of kind.
    let mut edited = before.clone();
    edited.data.as_object_mut().unwrap().insert(
        "counts",
        Value::Array(vec![Value::Int(1), Value::Int(2), Value::Double(3.5)]),
    );
    let err = edit::check_edit(&before, &mut edited, edit::Allow::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("data.counts[2] from an integer to a double"),
        "{err}"
    );
}

#[test]
fn a_change_of_version_is_refused_unless_asked_naming_the_steps() {
    let save = Save::from_str(
        r#"{"meta": {"version": 4, "history": [{"from": 1, "to": 4, "writer": "1.0.0"}],
            "mods": {"tinker": {"version": 2}}},
            "data": {"level": 3}}"#,
    )
    .unwrap();
    let versions = edit::Allow::default().with_version_change();
    for (path, value, says) in [
        (
            "meta.version",
            5,
            "meta.version would go from 4 to 5, skipping the steps 4->5:",
        ),
        (
            "meta.version",
            12,
            "skipping the steps 4->5, 5->6, ..., 11->12 (8 steps)",
        ),
        (
            "meta.mods.tinker.version",
            1,
            "meta.mods.tinker.version would go from 2 to 1: the next upgrade would run the \
             steps of mod \"tinker\" 1->2 again",
        ),
    ] {
        let mut changed = save.clone();
        let err = edit::set(&mut changed, path, Value::Int(value)).unwrap_err();
        assert!(err.to_string().contains(says), "{path}: {err}");
        assert!(err
            .to_string()
            .contains("which upgrade steps the data has had"));
        let needs = err.refused_unless().expect("refused for want of asking");
        assert!(needs.version_change && !needs.kind_change && !needs.new_member);
        assert_eq!(changed, save);
        edit::set_allowing(&mut changed, path, Value::Int(value), versions).unwrap();
        assert_ne!(changed, save);
    }
    // Below the history, even asked for.
    let mut changed = save.clone();
    let err =
        edit::set_allowing(&mut changed, "meta.version", Value::Int(3), versions).unwrap_err();
    assert!(err.to_string().contains("below version 4"), "{err}");
    assert_eq!(err.refused_unless(), None);

    // A whole edit: a kind and a version changed are refused together, both named.
    let mut edited = save.clone();
    edited.meta.version = 6;
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("level", Value::Double(3.5));
    let err = edit::check_edit(&save, &mut edited, edit::Allow::default()).unwrap_err();
    let needs = err.refused_unless().unwrap();
    assert!(needs.kind_change && needs.version_change);
    assert!(err
        .to_string()
        .contains("data.level from an integer to a double"));
    assert!(err
        .to_string()
        .contains("meta.version would go from 4 to 6"));
    let both = edit::Allow::default().and(needs);
    assert_eq!(edit::check_edit(&save, &mut edited, both).unwrap().len(), 1);
}

#[test]
fn refusals_say_what_was_refused_and_name_no_rust_item() {
    let mut save = Save::from_str(SAVE).unwrap();
    for (path, value, kinds, member) in [
        ("data.ship.crew", Value::Double(3.5), true, false),
        ("data.ship.engine", Value::Int(1), false, true),
    ] {
        let err = edit::set_existing(&mut save, path, value).unwrap_err();
        let needs = err.refused_unless().unwrap();
        assert_eq!(
            (needs.kind_change, needs.new_member),
            (kinds, member),
            "{path}"
        );
        for rust in ["edit::", "Allow", "save-upgrade", "--"] {
            assert!(!err.message().contains(rust), "{path}: {err}");
        }
    }
}

#[test]
fn nothing_at_a_path_says_why() {
    let save = Save::from_str(SAVE).unwrap();
    for (path, says) in [
        (
            "data.ship.hul",
            "nothing at data.ship.hul: data.ship has no member \"hul\"; did you mean \
             data.ship.hull?",
        ),
        (
            "data.ship[0]",
            "data.ship is an object, not an array (its keys: \"cargo\", \"crew\", \"hull\")",
        ),
        (
            "data.ship.cargo.mass",
            "data.ship.cargo is an array of 1 elements, not an object",
        ),
        ("data.ship.crew.size", "data.ship.crew is an integer"),
        ("meta.writer.major", "meta.writer is a string"),
    ] {
        let err = edit::get_existing(&save, path).unwrap_err();
        assert!(err.to_string().contains(says), "{path}: {err}");
    }
    assert_eq!(
        edit::get_existing(&save, "data.ship.crew").unwrap(),
        Value::Int(3)
    );
    assert_eq!(
        edit::meant_path("data.systems[tau ceti].visited").as_deref(),
        Some(r#"data.systems["tau ceti"].visited"#)
    );
    assert_eq!(edit::meant_path("data.ship.hull"), None);
    let err = edit::get(&save, "data.systems[tau ceti].visited").unwrap_err();
    assert!(
        err.to_string()
            .contains(r#"a key in brackets is written in double quotes, as errors write it: data.systems["tau ceti"].visited"#),
        "{err}"
    );
}

/// A chain with shapes of versions 1 and 2 of its data and of mod `tinker`'s version 1.
fn shaped_chain() -> savechain::upgrade::Chain {
    use savechain::shape::Shapes;
    use savechain::upgrade::{Chain, Mod, Step};
    let file = |v: u64, shape: &str| {
        (
            Shapes::file_name(v),
            Shapes::file_text(v, &shape.parse().unwrap()),
        )
    };
    let game = Shapes::from_files(&[
        file(1, r#"{"object": {"level": "u32", "name": "string"}}"#),
        file(2, r#"{"object": {"level": "u8", "title": "string"}}"#),
    ])
    .unwrap();
    let tinker = Mod::new("tinker", "1.0.0", vec![])
        .unwrap()
        .with_shapes(Shapes::from_files(&[file(1, r#"{"object": {"charge": "u8"}}"#)]).unwrap())
        .unwrap();
    let step = Step::lua("0001-title.lua", "return function(data) end").unwrap();
    Chain::new("1.0.0", vec![step])
        .unwrap()
        .with_shapes(game)
        .unwrap()
        .with_mods(vec![tinker])
        .unwrap()
}

#[test]
fn a_hand_edit_the_game_does_not_read_is_refused_naming_each_place() {
    let chain = shaped_chain();
    let before = Save::from_str(
        r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}},
            "data": {"level": 3, "name": "Wren", "mods": {"tinker": {"charge": 7}}}}"#,
    )
    .unwrap();
    let allow = edit::Allow::default();
    let mut after = before.clone();
    edit::set(&mut after, "data.level", Value::Int(-1)).unwrap();
    edit::set(&mut after, "data.mods.tinker.charge", Value::Int(300)).unwrap();
    edit::set(&mut after, "data.nick", Value::from("W")).unwrap();
    let err = edit::check_shape(&chain, &before, &after, allow).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Shape);
    let message = err.to_string();
    for says in [
        "data.level: the game reads an integer from 0 to 4294967295 here; -1 is out of that range",
        "data.mods.tinker.charge: the game reads an integer from 0 to 255 here; 300 is out of that range",
        "data.nick: the game reads no member \"nick\" here (it would be dropped when the game saves)",
    ] {
        assert!(message.contains(says), "{message}");
    }
    assert_eq!(
        err.refused_unless(),
        Some(edit::Allow::default().with_shape_mismatch())
    );
    edit::check_shape(&chain, &before, &after, allow.with_shape_mismatch()).unwrap();
    // What a save already held is not the change's doing: the edit of another place, or
    // of that place (still not read the same way), goes through.
    let mut later = after.clone();
    edit::set(&mut later, "data.name", Value::from("Ada")).unwrap();
    edit::set(&mut later, "data.level", Value::Int(-2)).unwrap();
    edit::check_shape(&chain, &after, &later, allow).unwrap();
    // A required member removed.
    let mut removed = before.clone();
    removed.data.as_object_mut().unwrap().remove("name");
    let err = edit::check_shape(&chain, &before, &removed, allow).unwrap_err();
    assert!(
        err.to_string()
            .contains("data.name: the game reads text here; the member is missing"),
        "{err}"
    );
}

#[test]
fn a_hand_edit_is_not_checked_where_the_chain_cannot_tell() {
    let chain = shaped_chain();
    let allow = edit::Allow::default();
    // A version with no recorded shape.
    let before = Save::from_str(r#"{"meta": {"version": 3}, "data": {"level": 3}}"#).unwrap();
    let mut after = before.clone();
    edit::set(&mut after, "data.level", Value::Int(-1)).unwrap();
    edit::check_shape(&chain, &before, &after, allow).unwrap();
    // The version changed by hand: its data is knowingly at odds with it.
    let before =
        Save::from_str(r#"{"meta": {"version": 1}, "data": {"level": 3, "name": "W"}}"#).unwrap();
    let mut after = before.clone();
    edit::set_allowing(
        &mut after,
        "meta.version",
        Value::Int(2),
        allow.with_version_change(),
    )
    .unwrap();
    edit::check_shape(&chain, &before, &after, allow).unwrap();
    // A save of another game than the one the chain is for.
    let game = chain.for_game("Hollow Keep").unwrap();
    let mut after = before.clone();
    edit::set(&mut after, "data.level", Value::Int(-1)).unwrap();
    edit::check_shape(&game, &before, &after, allow).unwrap();
    let mut ours = before.clone();
    ours.meta.extra.insert("game", Value::from("Hollow Keep"));
    let mut after = ours.clone();
    edit::set(&mut after, "data.level", Value::Int(-1)).unwrap();
    assert!(edit::check_shape(&game, &ours, &after, allow).is_err());
}

#[test]
fn a_value_fixed_toward_what_the_game_reads_is_no_change_of_kind() {
    let chain = shaped_chain();
    let allow = edit::Allow::default();
    let before = Save::from_str(
        r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}},
            "data": {"level": ["d", "0x1.8p+1"], "name": 1, "mods": {"tinker": {"charge": "x"}}}}"#,
    )
    .unwrap();
    // Another kind that the game reads there: set without asking for a change of kind.
    let mut save = before.clone();
    edit::set_shaped(&chain, &mut save, "data.name", Value::from("Wren"), allow).unwrap();
    edit::set_shaped(
        &chain,
        &mut save,
        "data.mods.tinker.charge",
        Value::Int(5),
        allow,
    )
    .unwrap();
    // An integer over a double where the game reads an integer stays the integer.
    edit::set_shaped(&chain, &mut save, "data.level", Value::Int(3), allow).unwrap();
    assert_eq!(save.data["level"], Value::Int(3));
    assert_eq!(save.data["name"], Value::from("Wren"));
    edit::check_shape(&chain, &before, &save, allow).unwrap();
    // Another kind it does not read either is still a change of kind.
    let mut wrong = before.clone();
    let err =
        edit::set_shaped(&chain, &mut wrong, "data.name", Value::Bool(true), allow).unwrap_err();
    assert!(
        err.to_string()
            .contains("data.name from an integer to a boolean"),
        "{err}"
    );
    assert_eq!(wrong, before);
    // Without the chain, the rules stand as they were.
    let mut plain = before.clone();
    assert!(edit::set(&mut plain, "data.name", Value::from("Wren")).is_err());
    edit::set(&mut plain, "data.level", Value::Int(3)).unwrap();
    assert_eq!(plain.data["level"], Value::Double(3.0));

    // The same for a save edited as a whole: every kind change is returned, none refused.
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("name", Value::from("Wren"));
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("level", Value::Int(3));
    let kinds = edit::check_edit_shaped(&chain, &before, &mut edited, allow).unwrap();
    assert_eq!(edited.data["level"], Value::Int(3));
    let paths: Vec<&str> = kinds.iter().map(|k| k.path.as_str()).collect();
    assert_eq!(paths, ["data.level", "data.name"]);
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("name", Value::Bool(true));
    assert!(edit::check_edit_shaped(&chain, &before, &mut edited, allow).is_err());
    let mut edited = before.clone();
    edited
        .data
        .as_object_mut()
        .unwrap()
        .insert("level", Value::Int(3));
    edit::check_edit(&before, &mut edited, allow).unwrap();
    assert_eq!(edited.data["level"], Value::Double(3.0));
}

#[test]
fn why_a_hand_edit_is_not_checked_is_told() {
    let chain = shaped_chain();
    let save = |text: &str| Save::from_str(text).unwrap();
    assert_eq!(
        edit::not_checked(&chain, &save(r#"{"meta": {"version": 1}, "data": {}}"#)),
        None
    );
    let why = edit::not_checked(&chain, &save(r#"{"meta": {"version": 3}, "data": {}}"#));
    assert_eq!(why.unwrap().to_string(), "version 3 has no recorded shape");
    let game = chain.for_game("Hollow Keep").unwrap();
    let why = edit::not_checked(
        &game,
        &save(r#"{"meta": {"version": 1, "game": "Mossy"}, "data": {}}"#),
    );
    assert_eq!(
        why.unwrap().to_string(),
        r#"the save is of game "Mossy", the chain's is "Hollow Keep""#
    );
    let bare = savechain::upgrade::Chain::new("1.0.0", vec![]).unwrap();
    let why = edit::not_checked(&bare, &save(r#"{"meta": {"version": 1}, "data": {}}"#));
    assert_eq!(
        why.unwrap().to_string(),
        "version 1 has no recorded shape (the chain records none)"
    );
}
