//! A deterministic generator of game-like saves, for benchmarks.
//!
//! [`game_save`] builds the save of a space-trading game: a `player`, their `ship`, a big
//! array of star `systems` (positions, planets with orbits, markets, stations), the state
//! of the game's `lua` modules (nested tables of strings, integers and doubles, with a few
//! byte strings), some binary `blobs` and random-number state with `u64` values above
//! `i64::MAX`. Like a real save it is mostly doubles and small objects.
//!
//! The same `(target_bytes, seed)` always gives the same save, on every platform: the
//! randomness comes from the small [`SplitMix64`] generator below, not from a crate.
//!
//! Benchmarks include this file with
//!
//! ```ignore
//! #[path = "support/game.rs"]
//! mod game;
//! ```
//!
//! It needs nothing but `savechain` (and `semver`, one of its dependencies).

#![allow(dead_code)] // Each bench that includes this file uses a different part of it.

use savechain::{Map, Save, Value};

/// The schema version of the generated saves.
pub const VERSION: u64 = 1;

/// The seed of the game save every bench generates, so they all measure the same save.
pub const SEED: u64 = 0x5a7e_c4a1_2024;

/// Size of that save unless `SAVECHAIN_BENCH_GAME_MB` says otherwise, in MiB of canonical
/// pretty text.
pub const MIB: usize = 50;

/// A save of about `target_bytes` bytes of canonical pretty text (what `Save::to_vec` and
/// `Save::store` write), deterministic in `target_bytes` and `seed`.
///
/// The size is reached by adding star systems, Lua state and blobs until their measured
/// text fills the target; the result is within a few kilobytes of it for targets of a
/// megabyte or more (never below about 30 kB, the fixed part).
pub fn game_save(target_bytes: usize, seed: u64) -> Save {
    let mut rng = SplitMix64::new(seed);
    // Shares of the text: systems ~80 %, Lua state ~15 %, blobs ~2.5 %, the rest fixed.
    let player = player(&mut rng);
    let ship = ship(&mut rng);
    // Members of `data` are written 4 spaces deeper than at depth 0; systems, elements of
    // `data.systems`, 6; Lua tables, elements of `data.lua.modules.<name>.entries`, 12.
    let fixed = text_len(&player, 4) + text_len(&ship, 4);
    let budget = target_bytes.saturating_sub(fixed);
    let blobs = blobs(&mut rng, budget / 50);
    let lua = lua_state(&mut rng, budget * 15 / 100);
    let used = text_len(&blobs, 4) + text_len(&lua, 4);
    let systems = fill(budget.saturating_sub(used), 6, |i| star_system(&mut rng, i));

    let data = object([
        ("blobs", blobs),
        ("galaxy_seed", Value::from(rng.next_u64() | 1 << 63)),
        ("lua", lua),
        ("player", player),
        (
            "rng_state",
            Value::Array((0..4).map(|_| Value::from(rng.next_u64())).collect()),
        ),
        ("ship", ship),
        ("systems", Value::Array(systems)),
        ("tick", Value::Int(rng.below(1 << 40) as i64)),
    ]);
    Save::new(VERSION, data).with_writer(semver::Version::new(0, 1, 0))
}

/// The splitmix64 generator (Steele, Lea and Flood, 2014): tiny, fast, good enough for
/// test data, and the same on every platform.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)` (`n > 0`), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[lo, hi]`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo) as u64 + 1) as i64
    }

    /// Uniform in `[0, 1)`, with all 53 bits random.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`: a double with a full mantissa, as physics produces.
    pub fn real(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// A value a designer would type: a multiple of `step` in `[lo, hi]` (short hexfloat
    /// when `step` is a power of two).
    pub fn round(&mut self, lo: f64, hi: f64, step: f64) -> f64 {
        let steps = ((hi - lo) / step) as u64;
        lo + step * self.below(steps + 1) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// An object from `(key, value)` pairs (any order; the map sorts them).
fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(members.into_iter().collect::<Map>())
}

fn vec3(rng: &mut SplitMix64, scale: f64) -> Value {
    Value::Array(
        (0..3)
            .map(|_| Value::Double(rng.real(-scale, scale)))
            .collect(),
    )
}

/// The length of `value`'s canonical pretty text when it is written `extra_indent` spaces
/// deeper than at depth 0 (every line but the first gets that much more indentation),
/// without the final newline.
fn text_len(value: &Value, extra_indent: usize) -> usize {
    let text = savechain::text::to_vec(value).expect("generated values are shallow");
    let lines = text.iter().filter(|&&b| b == b'\n').count();
    text.len() - 1 + (lines - 1) * extra_indent
}

/// Makes items with `make(index)` until their text, written as elements of an array
/// whose elements get `extra_indent` more spaces a line than at depth 0, fills `budget`
/// bytes.
fn fill(budget: usize, extra_indent: usize, mut make: impl FnMut(usize) -> Value) -> Vec<Value> {
    let mut items = Vec::new();
    let mut used = 0;
    while used < budget {
        let item = make(items.len());
        // The text, ",\n" and the element's own indentation.
        used += text_len(&item, extra_indent) + 2 + extra_indent;
        items.push(item);
    }
    items
}

const SYLLABLES: &[&str] = &[
    "al", "be", "cor", "da", "el", "fa", "gor", "hy", "is", "ka", "lu", "mer", "no", "or", "pra",
    "qua", "ri", "sol", "ta", "ur", "ve", "xan", "ya", "zer", "ën", "ø", "æ", "ñu",
];

const COMMODITIES: &[&str] = &[
    "water",
    "food",
    "ore",
    "alloys",
    "fuel",
    "medicine",
    "electronics",
    "weapons",
    "luxuries",
    "textiles",
    "machinery",
    "narcotics",
    "robots",
    "gems",
    "antimatter",
];

const FACTIONS: &[&str] = &[
    "Federation",
    "Empire",
    "Free Traders",
    "Kuiper Syndicate",
    "Ōtsuka Combine",
    "Independents",
];

const SERVICES: &[&str] = &[
    "refuel",
    "repair",
    "market",
    "shipyard",
    "outfitting",
    "bar",
    "bounties",
    "missions",
];

const STAR_CLASSES: &[&str] = &[
    "O5V", "B2V", "A0V", "F5V", "G2V", "K1V", "M3V", "M5Ve", "DA2", "K0III",
];

fn name(rng: &mut SplitMix64, syllables: u64) -> String {
    let mut s = String::new();
    for _ in 0..syllables {
        s.push_str(rng.pick(SYLLABLES));
    }
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => s,
    }
}

fn player(rng: &mut SplitMix64) -> Value {
    let standing = FACTIONS
        .iter()
        .map(|f| (*f, Value::Double(rng.real(-1.0, 1.0))))
        .collect::<Map>();
    let log = (0..64)
        .map(|i| {
            object([
                ("tick", Value::Int(i * 977 + rng.int(0, 900))),
                (
                    "text",
                    Value::from(format!(
                        "Docked at {} — sold {} × {}",
                        name(rng, 3),
                        rng.int(1, 200),
                        rng.pick(COMMODITIES)
                    )),
                ),
            ])
        })
        .collect();
    object([
        ("name", Value::from("Zoë Ångström-Nakamura 🚀")),
        ("credits", Value::from(rng.below(1 << 48))),
        (
            "lifetime_earnings",
            Value::from(u64::MAX - rng.below(1 << 32)),
        ),
        ("position", vec3(rng, 1.0e12)),
        ("velocity", vec3(rng, 3.0e4)),
        (
            "orientation",
            Value::Array((0..4).map(|_| Value::Double(rng.real(-1.0, 1.0))).collect()),
        ),
        (
            "stats",
            object([
                ("kills", Value::Int(rng.int(0, 5000))),
                ("deaths", Value::Int(rng.int(0, 40))),
                ("jumps", Value::Int(rng.int(0, 100_000))),
                ("play_time", Value::Double(rng.real(0.0, 1.0e6))),
                ("reputation", Value::Double(rng.real(-100.0, 100.0))),
                ("distance_travelled", Value::Double(rng.real(0.0, 1.0e15))),
                ("faction_standing", Value::Object(standing)),
            ]),
        ),
        ("log", Value::Array(log)),
        ("hardcore", Value::Bool(rng.chance(0.1))),
        ("guild", Value::Null),
    ])
}

fn ship(rng: &mut SplitMix64) -> Value {
    let cargo = (0..48)
        .map(|_| {
            object([
                ("item", Value::from(rng.pick(COMMODITIES))),
                ("qty", Value::Int(rng.int(1, 500))),
                ("mass", Value::Double(rng.real(0.1, 40.0))),
                ("stolen", Value::Bool(rng.chance(0.05))),
            ])
        })
        .collect();
    let modules = (0..16)
        .map(|slot| {
            object([
                ("slot", Value::Int(slot)),
                (
                    "kind",
                    Value::from(rng.pick(&[
                        "laser",
                        "shield",
                        "thruster",
                        "scanner",
                        "cargo rack",
                    ])),
                ),
                ("health", Value::Double(rng.round(0.0, 1.0, 1.0 / 64.0))),
                ("power", Value::Double(rng.real(0.0, 12.0))),
            ])
        })
        .collect();
    object([
        ("name", Value::from("Kestrel II")),
        ("class", Value::from("Cobra Mk III")),
        ("hull", Value::Double(rng.real(0.0, 100.0))),
        ("hull_max", Value::Double(100.0)),
        ("shield", Value::Double(rng.real(0.0, 250.0))),
        ("fuel", Value::Double(rng.round(0.0, 32.0, 0.25))),
        ("cargo", Value::Array(cargo)),
        ("modules", Value::Array(modules)),
        ("position", vec3(rng, 1.0e12)),
        (
            "rotation",
            Value::Array((0..4).map(|_| Value::Double(rng.real(-1.0, 1.0))).collect()),
        ),
    ])
}

fn star_system(rng: &mut SplitMix64, index: usize) -> Value {
    let planets = (0..rng.int(0, 8))
        .map(|p| {
            object([
                (
                    "name",
                    Value::from(format!(
                        "{} {}",
                        name(rng, 2),
                        ["I", "II", "III", "IV", "V", "VI", "VII", "VIII"][p as usize]
                    )),
                ),
                (
                    "kind",
                    Value::from(rng.pick(&["rocky", "gas giant", "ice", "ocean", "lava"])),
                ),
                ("radius", Value::Double(rng.real(1.0e6, 7.0e7))),
                ("mass", Value::Double(rng.real(1.0e22, 2.0e27))),
                (
                    "orbit",
                    object([
                        ("semi_major_axis", Value::Double(rng.real(5.0e10, 5.0e12))),
                        ("eccentricity", Value::Double(rng.real(0.0, 0.3))),
                        ("inclination", Value::Double(rng.real(-0.2, 0.2))),
                        ("period", Value::Double(rng.real(1.0e6, 1.0e9))),
                        ("phase", Value::Double(rng.real(0.0, std::f64::consts::TAU))),
                    ]),
                ),
                (
                    "population",
                    Value::Int(if rng.chance(0.3) {
                        rng.int(0, 20_000_000_000)
                    } else {
                        0
                    }),
                ),
            ])
        })
        .collect();
    let markets = (0..rng.int(0, 6))
        .map(|_| {
            object([
                ("commodity", Value::from(rng.pick(COMMODITIES))),
                ("buy", Value::Int(rng.int(2, 5000))),
                ("sell", Value::Int(rng.int(2, 5000))),
                ("supply", Value::Double(rng.real(0.0, 1.0e4))),
                ("demand", Value::Double(rng.real(0.0, 1.0e4))),
                (
                    "trend",
                    Value::Array((0..4).map(|_| Value::Double(rng.real(-0.1, 0.1))).collect()),
                ),
            ])
        })
        .collect();
    let stations = (0..rng.int(0, 3))
        .map(|_| {
            let services = (0..rng.int(1, 5))
                .map(|_| Value::from(rng.pick(SERVICES)))
                .collect();
            object([
                ("name", Value::from(format!("{} Station", name(rng, 2)))),
                ("owner", Value::from(rng.pick(FACTIONS))),
                ("docking_fee", Value::Int(rng.int(0, 2000))),
                ("position", vec3(rng, 1.0e9)),
                ("services", Value::Array(services)),
            ])
        })
        .collect();
    object([
        ("id", Value::Int(index as i64)),
        ("name", Value::from(name(rng, 3))),
        ("position", vec3(rng, 5.0e4)),
        (
            "star",
            object([
                ("class", Value::from(rng.pick(STAR_CLASSES))),
                ("mass", Value::Double(rng.real(0.08, 60.0))),
                ("luminosity", Value::Double(rng.real(1.0e-4, 1.0e5))),
                (
                    "temperature",
                    Value::Double(rng.round(2000.0, 40000.0, 1.0)),
                ),
            ]),
        ),
        ("planets", Value::Array(planets)),
        ("markets", Value::Array(markets)),
        ("stations", Value::Array(stations)),
        ("visited", Value::Bool(rng.chance(0.2))),
        (
            "discovered_by",
            if rng.chance(0.1) {
                Value::from(name(rng, 2))
            } else {
                Value::Null
            },
        ),
        ("seed", Value::from(rng.next_u64())),
    ])
}

/// One Lua table as a module would leave it: a mix of strings, integers, doubles,
/// booleans, short arrays and, now and then, a binary string or a nested table.
fn lua_table(rng: &mut SplitMix64, depth: u32) -> Value {
    let members = rng.int(3, 9);
    let mut map = Map::new();
    for k in 0..members {
        let key = format!("{}_{k}", name(rng, 2).to_lowercase());
        let value = match rng.below(12) {
            0..=2 => Value::Double(rng.real(-1.0e3, 1.0e3)),
            3 => Value::Double(rng.round(0.0, 100.0, 0.5)),
            4 | 5 => Value::Int(rng.int(-1000, 100_000)),
            6 | 7 => Value::from(format!("{} {}", name(rng, 2), name(rng, 3))),
            8 => Value::Bool(rng.chance(0.5)),
            9 => Value::Array(
                (0..rng.int(1, 6))
                    .map(|_| Value::Double(rng.real(0.0, 1.0)))
                    .collect(),
            ),
            10 if rng.chance(0.3) => {
                Value::Bytes((0..rng.int(4, 24)).map(|_| rng.next_u64() as u8).collect())
            }
            _ if depth < 3 => lua_table(rng, depth + 1),
            _ => Value::Int(rng.int(0, 10)),
        };
        map.insert(key, value);
    }
    Value::Object(map)
}

fn lua_state(rng: &mut SplitMix64, budget: usize) -> Value {
    const MODULES: &[&str] = &["ai", "economy", "missions", "npc_memory", "ui", "weather"];
    let mut modules = Map::new();
    for module in MODULES {
        let entries = fill(budget / MODULES.len(), 12, |_| lua_table(rng, 0));
        modules.insert(
            *module,
            object([
                ("version", Value::Int(rng.int(1, 12))),
                ("entries", Value::Array(entries)),
                ("dirty", Value::Bool(rng.chance(0.5))),
            ]),
        );
    }
    object([
        ("modules", Value::Object(modules)),
        ("globals", lua_table(rng, 1)),
    ])
}

/// Binary data: a fog-of-war bitmap (mostly small bytes, escaped in the text) and a
/// compressed thumbnail (random bytes).
fn blobs(rng: &mut SplitMix64, budget: usize) -> Value {
    // About 4 text bytes a byte, split between the two.
    let fog = (0..budget / 8)
        .map(|_| {
            if rng.chance(0.8) {
                0
            } else {
                rng.below(16) as u8
            }
        })
        .collect();
    let thumbnail = (0..budget / 8).map(|_| rng.next_u64() as u8).collect();
    object([
        ("fog_of_war", Value::Bytes(fog)),
        ("thumbnail", Value::Bytes(thumbnail)),
        (
            "thumbnail_size",
            Value::Array(vec![Value::Int(64), Value::Int(36)]),
        ),
    ])
}
