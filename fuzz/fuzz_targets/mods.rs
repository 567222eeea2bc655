//! Any bytes, as a save of a game with mods, and as a mod's manifest: planning and
//! upgrading never panic; a mod not installed keeps its data and entry exactly; a mod held
//! back (keep going) keeps its data exactly, at its version, also through a store after it;
//! when nothing is held, keeping going changes nothing; and a manifest either makes a mod
//! or is refused.
#![no_main]

use std::cell::RefCell;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use savechain::upgrade::{Chain, Mod, ModStatus, Step, Upgrader};
use savechain::{Options, Save, Value};

fn chain() -> &'static Chain {
    static CHAIN: OnceLock<Chain> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let step = |name: &str, source: &str| Step::lua(name, source).unwrap();
        let game = Chain::new(
            "2.0.0",
            vec![step("0001-game.lua", "return function(d) if type(d) == 'table' then d.game_step = true end end")],
        )
        .unwrap();
        // Fails on data it does not expect, as third-party steps do.
        let picky = Mod::new(
            "picky",
            "1.1.0",
            vec![
                step("0001-count.lua", "return function(d) d.mods.picky.n = d.mods.picky.n + 1 end"),
                step("0002-name.lua", "return function(d) d.mods.picky.name = d.mods.picky.name:upper() end"),
            ],
        )
        .unwrap();
        let calm = Mod::new(
            "calm",
            "0.2.0",
            vec![step("0001-mark.lua", "return function(d) if type(d) == 'table' then d.calm_was_here = true end end")],
        )
        .unwrap()
        .after(&["picky"]);
        game.with_mods(vec![calm, picky]).unwrap()
    })
}

thread_local! {
    static UPGRADER: RefCell<Upgrader<'static>> = RefCell::new(chain().upgrader());
}

fn mod_entry<'a>(save: &'a Save, name: &str) -> Option<&'a Value> {
    save.meta.extra.get("mods").and_then(|m| m.get(name))
}

fn mod_data<'a>(save: &'a Save, name: &str) -> Option<&'a Value> {
    save.data.get("mods").and_then(|m| m.get(name))
}

fuzz_target!(|data: &[u8]| {
    manifest(data);
    let Ok(save) = Save::from_slice(data) else {
        return;
    };
    let mut going = Options::default();
    going.keep_going = true;
    // Small budgets: an input is one save.
    going.limits = savechain::lua::Limits::new(1_000_000, 64 << 20);
    let mut stopping = going.clone();
    stopping.keep_going = false;
    let _ = chain().plan_upgrade(&save, &stopping);
    let _ = chain().plan_upgrade(&save, &going);
    UPGRADER.with(|upgrader| {
        let mut upgrader = upgrader.borrow_mut();
        let kept = upgrader.upgrade(save.clone(), &going);
        let stopped = upgrader.upgrade(save.clone(), &stopping);
        let Ok(kept) = kept else {
            assert!(stopped.is_err(), "keeping going failed where stopping did not");
            return;
        };
        for m in &kept.mods {
            match m.status {
                ModStatus::NotInstalled | ModStatus::Held(_) | ModStatus::NotInSave => {
                    assert_eq!(mod_data(&kept.save, &m.name), mod_data(&save, &m.name), "{}", m.name);
                }
                _ => {}
            }
            match m.status {
                ModStatus::NotInstalled | ModStatus::NotInSave => {
                    assert_eq!(mod_entry(&kept.save, &m.name), mod_entry(&save, &m.name));
                }
                ModStatus::Held(_) => {
                    let version = |s: &Save| mod_entry(s, &m.name).and_then(|e| e.get("version")).cloned();
                    assert_eq!(version(&kept.save), version(&save));
                }
                _ => {}
            }
        }
        // A store after it never claims a version for a held mod's data.
        let stored = chain().resave(kept.save.meta.clone(), kept.save.data.clone());
        for m in kept.mods.iter().filter(|m| matches!(m.status, ModStatus::Held(_))) {
            let version = |s: &Save| mod_entry(s, &m.name).and_then(|e| e.get("version")).cloned();
            assert_eq!(version(&stored), version(&save), "{}", m.name);
        }
        let held = kept.mods.iter().any(|m| matches!(m.status, ModStatus::Held(_)));
        match stopped {
            Ok(stopped) => {
                assert!(!held, "a mod held back, yet the upgrade without keeping going worked");
                assert_eq!(stopped.save, kept.save);
            }
            Err(e) => assert!(held && e.failed_mod().is_some(), "{e}"),
        }
    });
});

/// The bytes as a mod's manifest, in a folder with no steps.
fn manifest(data: &[u8]) {
    thread_local! {
        static DIR: tempfile::TempDir = tempfile::tempdir().unwrap();
    }
    DIR.with(|dir| {
        std::fs::write(dir.path().join("mod.json"), data).unwrap();
        if let Ok(m) = Mod::from_dir(dir.path()) {
            assert!(!m.name().is_empty());
            assert!(m.steps().is_empty());
        }
    });
}
