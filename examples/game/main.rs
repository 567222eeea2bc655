//! A small game that embeds savechain the way a real one does: the library alone, with Lua
//! compiled in and the `Declare` derive (`default-features = false, features =
//! ["vendored", "derive"]`, no command-line crates), its own upgrade chain (a Rust step
//! with its revision, a folder of Lua steps with a helper module, and a step declared on
//! its state type with `#[derive(savechain::Declare)]`), its own version as the writer
//! and its name as the game whose saves alone the chain upgrades, typed state through
//! serde, Lua module state in its own Lua state, and loads through the binary cache. Its steps folder holds the shape recorded
//! for each save version (`upgrades/shapes/NNNN.json`: 1 to 3 inferred from its fixtures,
//! `fixtures/vN/`, 4 from its `State` type), and it runs the drift guard at start, as its
//! own tests do (`tests/example_game.rs` in savechain).
//!
//! ```text
//! cargo run --example game --no-default-features --features vendored,derive
//! ```
//!
//! The game, Hollow Keep, is at release 1.4.0 and save version 4. A player's save from
//! release 1.0.0 (version 1) is loaded, played a little, and saved again.

mod chain;
mod state;

use savechain::cache::{self, Refusal, Source};
use savechain::lua::mlua;
use savechain::{Options, Value};

use chain::{hollow_keep_chain, steps_dir, GAME_VERSION};
use state::State;

/// The quest module of the game's scripts, which keeps its state in saves.
const QUESTS: &str = r#"
local savechain = require("savechain")
local quests = { active = {}, done = 0 }
savechain.register("quests", {
  save = function() return quests end,
  load = function(saved)
    quests = saved or { active = {}, done = 0 }
    -- The quest being tracked is one of the active ones, the same table: saved once, as a
    -- shared table, and still the same table after loading.
    if not quests.tracked then
      for _, q in ipairs(quests.active) do
        if type(q) == "table" then quests.tracked = q break end
      end
    end
  end,
})
return {
  finish = function(name)
    for i, q in ipairs(quests.active) do
      if q == name then table.remove(quests.active, i) quests.done = quests.done + 1 return true end
    end
    return false
  end,
}
"#;

/// Plays a little in Lua: hands the saved module states to the scripts, finishes a quest,
/// and collects the states again.
fn play_scripts(saved: &Value) -> savechain::Result<Value> {
    let lua = mlua::Lua::new();
    let savechain_lua = savechain::lua::install(&lua)?;
    let quests: mlua::Table = lua.load(QUESTS).set_name("quests.lua").eval()?;
    let restore: mlua::Function = savechain_lua.get("restore")?;
    restore.call::<()>(savechain::lua::to_lua(&lua, saved)?)?;
    let finished: bool = quests
        .get::<mlua::Function>("finish")?
        .call("find the lamp")?;
    assert!(finished, "the saved quest came back");
    let collect: mlua::Function = savechain_lua.get("collect")?;
    savechain::lua::from_lua(&lua, &collect.call::<mlua::Value>(())?)
}

/// Whether the scripts, given the saved module states, see the tracked quest as the same
/// table as the active one.
fn play_scripts_check(saved: &Value) -> savechain::Result<bool> {
    let lua = mlua::Lua::new();
    let savechain_lua = savechain::lua::install(&lua)?;
    lua.load(QUESTS).set_name("quests.lua").exec()?;
    let restore: mlua::Function = savechain_lua.get("restore")?;
    restore.call::<()>(savechain::lua::to_lua(&lua, saved)?)?;
    let collect: mlua::Function = savechain_lua.get("collect")?;
    let states: mlua::Table = collect.call(())?;
    let quests: mlua::Table = states.get("quests")?;
    let active: mlua::Table = quests.get("active")?;
    let tracked: mlua::Table = quests.get("tracked")?;
    Ok(tracked == active.get::<mlua::Table>(1)?)
}

fn main() -> savechain::Result<()> {
    let steps_dir = steps_dir();
    let chain = hollow_keep_chain(&steps_dir, "1")?;
    println!(
        "Hollow Keep {GAME_VERSION}: save versions {} to {}, {} steps",
        chain.oldest(),
        chain.latest(),
        chain.steps().len()
    );
    // The drift guard: what `State` reads is the shape recorded for the latest version, so
    // no change of the state ships without a new version, its step and its shape. The
    // game's own `cargo test` runs it too (tests/example_game.rs in savechain).
    savechain::guard::guard::<State>(&chain)?;
    println!(
        "the state matches the recorded shape of version {} ({} versions recorded)",
        chain.latest(),
        chain.shapes().len()
    );

    let dir = tempfile::tempdir()?;
    let path = dir.path().join("slot1.json");
    // A player's save from release 1.0.0, at version 1 (the game's fixture of version 1).
    std::fs::write(&path, include_str!("fixtures/v1/slot1.json"))?;

    // First load: no cache yet, so the JSON is upgraded (in memory; the file is left as
    // it is) and the cache written beside it.
    let options = Options::default();
    let loaded = cache::load(&path, &chain, &options)?;
    assert_eq!(loaded.source, Source::Json(Refusal::Missing));
    assert!(loaded.write_error().is_none(), "{:?}", loaded.write_error());
    let mut state: State = loaded.data_as()?;
    let meta = loaded.meta()?;
    println!("loaded from the JSON ({}), cache written", Refusal::Missing);
    println!("  {:?}", state.hero);

    // Play: the hero finds gold, the scripts finish a quest.
    state.hero.purse.gold += 5;
    state.lua = play_scripts(&state.lua)?;

    // Save: the JSON and its cache, at the latest version, written by this release, keeping
    // the save's history.
    let save = chain.resave(meta, savechain::to_value(&state)?);
    cache::store(&save, &path, &chain)?;
    let text = std::fs::read_to_string(&path)?;
    assert!(text.contains(&format!("\"writer\": \"{GAME_VERSION}\"")));
    assert!(text.contains("\"history\""), "the upgrade is recorded");
    println!(
        "saved at version {}, writer {GAME_VERSION}",
        save.meta.version
    );

    // Next start: the cache is used in place, nothing parsed or upgraded.
    let loaded = cache::load(&path, &chain, &options)?;
    assert_eq!(loaded.source, Source::Cache);
    let state: State = loaded.data_as()?;
    assert_eq!(state.hero.purse.gold, 17);
    // The tracked quest is still the same table as the active one, through serde and back.
    let tracked = play_scripts_check(&state.lua)?;
    assert!(tracked);
    println!("loaded from the cache: {} gold", state.hero.purse.gold);

    // A fixed Rust step ships with a new revision: caches made by the old code are refused
    // and rebuilt from the JSON, which is always the truth.
    let fixed = hollow_keep_chain(&steps_dir, "2")?;
    let loaded = cache::load(&path, &fixed, &options)?;
    assert_eq!(loaded.source, Source::Json(Refusal::ChainChanged));
    println!("after a fixed step: {}", Refusal::ChainChanged);

    // A save of another game, put among the game's own by mistake, is refused and left as
    // it is, instead of being garbled by this game's steps.
    let stray = dir.path().join("slot2.json");
    let text = r#"{"meta": {"game": "Dust Rangers", "version": 1}, "data": {"rover": {}}}"#;
    std::fs::write(&stray, text)?;
    let refused = cache::load(&stray, &chain, &options).err();
    let refused = refused.expect("another game's save is refused");
    assert_eq!(std::fs::read_to_string(&stray)?, text);
    println!("another game's save: {refused}");
    Ok(())
}
