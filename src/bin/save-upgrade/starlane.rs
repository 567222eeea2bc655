//! The upgrade chain of an example game, Starlane Traders: a space-trading game whose save
//! holds a player, a ship with cargo and position, star systems and Lua module state, at
//! versions 1 to 9. `save-upgrade` uses it unless given `--upgrades DIR`; `fixtures/` holds
//! saves at every version, and the tests and benchmarks include this file too.
//!
//! The Lua and declared steps are the files of `upgrades/`, compiled in; the Rust steps are
//! below. The
//! chain's writer is save-upgrade's own version, the release of the tool that carries it.
//! The chain names its game, so it upgrades only saves whose `meta.game` is [`GAME`]: run
//! on another game's saves by mistake, it refuses them instead of garbling them.
//!
//! | step | kind | what a release changed |
//! | --- | --- | --- |
//! | 1 -> 2 | declared | rename `player.reputation` to `standing`; move `player.credits` into `player.wallet` |
//! | 2 -> 3 | Rust | credits become a double; `player.name` splits into `given` and `family` |
//! | 3 -> 4 | Lua | positions change units (x1000); hull from percent to a fraction |
//! | 4 -> 5 | Lua | `systems` turns from an array into a table keyed by id |
//! | 5 -> 6 | Rust | `ship.dock_system` and `ship.dock_bay` merge into `ship.dock`; `player.rank` becomes an enum-like table |
//! | 6 -> 7 | declared | `ship.shield` added with a default; `player.tutorial_done` dropped |
//! | 7 -> 8 | Lua | the missions module's state is reshaped into one log |
//! | 8 -> 9 | Rust | every cargo record changes layout |

use savechain::shape::Shapes;
use savechain::upgrade::{Chain, Step, StepContext};
use savechain::{Map, Result, Value};

/// The declared steps of `upgrades/`, by file name.
const DECLARED_STEPS: &[(&str, &str)] = &[
    (
        "0001-reputation-and-wallet.json",
        include_str!("../../../upgrades/0001-reputation-and-wallet.json"),
    ),
    (
        "0006-shields-and-tutorial.json",
        include_str!("../../../upgrades/0006-shields-and-tutorial.json"),
    ),
];

/// The Lua steps of `upgrades/`, by file name.
const LUA_STEPS: &[(&str, &str)] = &[
    (
        "0003-units.lua",
        include_str!("../../../upgrades/0003-units.lua"),
    ),
    (
        "0004-systems-by-id.lua",
        include_str!("../../../upgrades/0004-systems-by-id.lua"),
    ),
    (
        "0007-mission-log.lua",
        include_str!("../../../upgrades/0007-mission-log.lua"),
    ),
];

/// The recorded shapes of `upgrades/shapes/`, by file name: versions 1 to 8 inferred from
/// `fixtures/vN/` (`save-upgrade shape record --map systems` from version 5, where star
/// systems are keyed by id), version 9 the shape of the game's type at that version
/// (`tests/common/starlane_state.rs`).
const SHAPES: &[(&str, &str)] = &[
    (
        "0001.json",
        include_str!("../../../upgrades/shapes/0001.json"),
    ),
    (
        "0002.json",
        include_str!("../../../upgrades/shapes/0002.json"),
    ),
    (
        "0003.json",
        include_str!("../../../upgrades/shapes/0003.json"),
    ),
    (
        "0004.json",
        include_str!("../../../upgrades/shapes/0004.json"),
    ),
    (
        "0005.json",
        include_str!("../../../upgrades/shapes/0005.json"),
    ),
    (
        "0006.json",
        include_str!("../../../upgrades/shapes/0006.json"),
    ),
    (
        "0007.json",
        include_str!("../../../upgrades/shapes/0007.json"),
    ),
    (
        "0008.json",
        include_str!("../../../upgrades/shapes/0008.json"),
    ),
    (
        "0009.json",
        include_str!("../../../upgrades/shapes/0009.json"),
    ),
];

/// The example game's name, as its saves carry it in `meta.game`.
pub const GAME: &str = "Starlane Traders";

/// The example game's chain, versions 1 to 9, for saves of [`GAME`] only, with the shape
/// of each version.
pub fn chain() -> Result<Chain> {
    // Each Rust step's revision changes whenever its code (or UNIT_MASS) does.
    let mut steps = vec![
        Step::rust(
            2,
            "credits become a double; player.name splits in two",
            "1",
            credits_and_names,
        ),
        Step::rust(
            5,
            "ship dock merges into one field; player.rank becomes a table",
            "1",
            dock_and_rank,
        ),
        Step::rust(8, "cargo records: good, count and mass", "1", cargo_layout),
    ];
    for (file, source) in LUA_STEPS {
        steps.push(Step::lua(file, source)?);
    }
    for (file, text) in DECLARED_STEPS {
        steps.push(Step::declared_file(file, text)?);
    }
    Chain::new(env!("CARGO_PKG_VERSION"), steps)?
        .for_game(GAME)?
        .with_shapes(Shapes::from_files(SHAPES)?)
}

fn object<'v>(data: &'v mut Value, path: &[&str]) -> std::result::Result<&'v mut Map, String> {
    let mut value = data;
    for key in path {
        value = value
            .get_mut(key)
            .ok_or_else(|| format!("the save has no {}", path.join(".")))?;
    }
    value
        .as_object_mut()
        .ok_or_else(|| format!("{} is not an object", path.join(".")))
}

/// 2 -> 3: `player.wallet.credits` from an integer to a double; `player.name` ("Ada
/// Quill") into `player.name.given` and `player.name.family` (split at the first space).
fn credits_and_names(data: &mut Value, _: &mut StepContext) -> std::result::Result<(), String> {
    let wallet = object(data, &["player", "wallet"])?;
    if let Some(credits) = wallet.get_mut("credits") {
        *credits = match *credits {
            Value::Int(i) => Value::Double(i as f64),
            Value::UInt(u) => Value::Double(u as f64),
            Value::Double(d) => Value::Double(d),
            ref other => return Err(format!("player.wallet.credits is {}", other.kind())),
        };
    }
    let player = object(data, &["player"])?;
    let name = match player.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(format!("player.name is {}", other.kind())),
        None => return Err("the save has no player.name".into()),
    };
    let (given, family) = name.split_once(' ').unwrap_or((&name, ""));
    let split: Map = [
        ("given", Value::from(given)),
        ("family", Value::from(family)),
    ]
    .into_iter()
    .collect();
    player.insert("name", Value::Object(split));
    Ok(())
}

/// 5 -> 6: `ship.dock_system` ("sol") and `ship.dock_bay` (4) into `ship.dock` ("sol:4");
/// `player.rank` ("captain") into `{"kind": "captain", "level": 3}`.
fn dock_and_rank(data: &mut Value, ctx: &mut StepContext) -> std::result::Result<(), String> {
    let ship = object(data, &["ship"])?;
    let system = ship.remove("dock_system");
    let bay = ship.remove("dock_bay");
    ctx.declare_removed("ship.dock_system");
    ctx.declare_removed("ship.dock_bay");
    let dock = match (system, bay) {
        (Some(Value::String(system)), Some(bay)) => {
            let bay = bay.as_i64().ok_or("ship.dock_bay is not an integer")?;
            Value::String(format!("{system}:{bay}"))
        }
        (None, None) => Value::Null,
        _ => return Err("ship.dock_system and ship.dock_bay go together".into()),
    };
    ship.insert("dock", dock);
    let player = object(data, &["player"])?;
    if let Some(Value::String(rank)) = player.get("rank") {
        let level = match rank.as_str() {
            "cadet" => 1,
            "pilot" => 2,
            "captain" => 3,
            "commodore" => 4,
            other => return Err(format!("unknown rank {other:?}")),
        };
        let kind = Value::String(rank.clone());
        let rank: Map = [("kind", kind), ("level", Value::Int(level))]
            .into_iter()
            .collect();
        player.insert("rank", Value::Object(rank));
    }
    Ok(())
}

/// Tonnes per unit of each good, for cargo masses.
const UNIT_MASS: &[(&str, f64)] = &[("ore", 2.5), ("water", 1.0), ("fuel", 0.8)];

/// 8 -> 9: each cargo record `{"item": "ore", "qty": 40}` becomes
/// `{"good": "ore", "count": 40, "mass": 100.0}`.
fn cargo_layout(data: &mut Value, ctx: &mut StepContext) -> std::result::Result<(), String> {
    let ship = object(data, &["ship"])?;
    let Some(Value::Array(cargo)) = ship.get_mut("cargo") else {
        return Err("ship.cargo is not an array".into());
    };
    for (i, record) in cargo.iter_mut().enumerate() {
        let record = record
            .as_object_mut()
            .ok_or_else(|| format!("ship.cargo[{i}] is not an object"))?;
        let good = record
            .remove("item")
            .ok_or_else(|| format!("ship.cargo[{i}] has no item"))?;
        let count = record
            .remove("qty")
            .ok_or_else(|| format!("ship.cargo[{i}] has no qty"))?;
        let unit = good
            .as_str()
            .and_then(|g| UNIT_MASS.iter().find(|(name, _)| *name == g))
            .map_or(1.0, |(_, mass)| *mass);
        // A count that is not a whole number (a hand edit, say) has no mass to give: the
        // save fails here rather than carry a made-up one.
        let Some(n) = count.as_i64() else {
            let shown = match &count {
                Value::Double(x) => format!("{x:?}"),
                other => other.to_string(),
            };
            return Err(format!("ship.cargo[{i}].qty is not an integer: {shown}"));
        };
        let mass = n as f64 * unit;
        ctx.declare_removed(&format!("ship.cargo[{i}].item"));
        ctx.declare_removed(&format!("ship.cargo[{i}].qty"));
        record.insert("good", good);
        record.insert("count", count);
        record.insert("mass", Value::Double(mass));
    }
    Ok(())
}
