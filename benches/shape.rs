//! What shapes cost (issue 29): checking the generated game save against the shape of its
//! state type, against loading it; and the library work of a hand edit (`save-upgrade
//! edit` after the editor closes: read the edited decimal view, check it against the
//! original, write the canonical text) with the edit checked against the shape, against
//! the same without.
//!
//! ```text
//! cargo bench --bench shape
//! SAVECHAIN_BENCH_GAME_MB=10 cargo bench --bench shape
//! ```
//!
//! Plain timing loops, best of `SAVECHAIN_BENCH_RUNS` (default 5) alternating runs, in one
//! process. The shape is `shape::of::<State>()` of `support/state.rs`, the game's own type,
//! recorded for the save's version in a chain of its own.

#[path = "support/env.rs"]
mod env;
#[path = "support/game.rs"]
mod game;
#[path = "support/state.rs"]
mod state;

use std::hint::black_box;
use std::time::{Duration, Instant};

use savechain::shape::{self, Shapes};
use savechain::text::{self, Style};
use savechain::upgrade::Chain;
use savechain::{edit, Save};

const MIB: f64 = 1024.0 * 1024.0;

fn main() {
    let save = game::game_save(env::game_mib(game::MIB) << 20, game::SEED);
    let canonical = save.to_vec().unwrap();
    let decimal = text::reformat(&canonical, Style::Decimal).unwrap();
    let shape = shape::of::<state::State>().unwrap();
    let shapes = Shapes::from_files(&[(
        Shapes::file_name(save.meta.version),
        Shapes::file_text(save.meta.version, &shape),
    )])
    .unwrap();
    // The same save checked against the shape inferred from it, with no map hints: every
    // key of the Lua modules' state (random names) becomes a member, so this shape is as
    // large as a shape gets for this save; a game's own shape reads that state as `any`.
    let inferred = shape::infer([&save.data], &shape::Hints::default()).unwrap();
    let inferred_text = inferred.to_string();
    let root = savechain::path::Path::from(vec![savechain::path::Segment::Key("data".into())]);
    let plain = Chain::new("0.1.0", vec![]).unwrap();
    let with_shapes = plain.clone().with_shapes(shapes).unwrap();
    assert!(with_shapes.check_save(&save).unwrap().is_empty());

    let load = || drop(black_box(Save::from_slice(&canonical).unwrap()));
    let check = || {
        let found = with_shapes.check_save(black_box(&save)).unwrap();
        assert!(found.is_empty());
    };
    let check_inferred = || {
        let found = inferred.check_at(black_box(&save.data), &root);
        assert!(found.is_empty());
    };
    let edit_with = |chain: &Chain| {
        let mut edited = Save::from_slice(&decimal).unwrap();
        edit::check_edit(&save, &mut edited, edit::Allow::default()).unwrap();
        edit::check_shape(chain, &save, &edited, edit::Allow::default()).unwrap();
        drop(black_box(edited.to_vec().unwrap()));
    };
    let edit_plain = || edit_with(&plain);
    let edit_shaped = || edit_with(&with_shapes);

    type Op<'a> = (&'static str, &'a dyn Fn());
    let ops: [Op; 5] = [
        ("load (Save::from_slice)", &load),
        ("check against the shape", &check),
        ("check against the inferred shape", &check_inferred),
        ("edit, no shapes", &edit_plain),
        ("edit, checked against the shape", &edit_shaped),
    ];
    let mut best = [Duration::MAX; 5];
    for _ in 0..env::runs(5) {
        for (i, (_, op)) in ops.iter().enumerate() {
            let t = Instant::now();
            op();
            best[i] = best[i].min(t.elapsed());
        }
    }
    println!(
        "Game save: {:.1} MiB of canonical text, {:.1} MiB of decimal view (best of {})",
        canonical.len() as f64 / MIB,
        decimal.len() as f64 / MIB,
        env::runs(5)
    );
    println!(
        "The type's shape: {} bytes of shape text; the inferred one: {:.1} MiB",
        shape.to_string().len(),
        inferred_text.len() as f64 / MIB
    );
    println!("{:<34} {:>10}", "operation", "ms");
    for (i, (name, _)) in ops.iter().enumerate() {
        println!("{:<34} {:>10.2}", name, best[i].as_secs_f64() * 1e3);
    }
    let ratio = |a: usize, b: usize| best[a].as_secs_f64() / best[b].as_secs_f64();
    println!("check / load: {:.3}x (goal: at most 0.5x)", ratio(1, 0));
    println!(
        "edit with the shape / edit without: {:.3}x (goal: at most 1.2x)",
        ratio(4, 3)
    );
    println!(
        "check against the inferred shape / load: {:.3}x",
        ratio(2, 0)
    );
}
