//! A declared step checked against the shapes recorded for the versions it upgrades from
//! and to: a change of a member the earlier version does not have, or an addition of one
//! it has, is a mistake found when the chain is made, before any save is touched.

use super::declared::{parse, show, Change, Declaration, Part};
use crate::shape::{Member, Object, Shape};

/// Checks `changes` (a declared step from version N) against `before`, the shape recorded
/// for version N, and `after`, the one for N + 1 when there is one. The changes are
/// followed in order on a copy of `before`, so a member renamed by one change is found by
/// its new name in the next.
///
/// Errors, each naming the change (`change 1 (rename player.hp to health): ...`):
/// - a rename, move, drop, to_double, wrap or unwrap of a member `before` lacks;
/// - an add of a member `before` has, a rename or a move onto a member it has;
/// - a to_double of something that is not a number, an unwrap of something that is not
///   an array;
/// - with `after`: a member a change makes (add, rename, move) that version N + 1 does
///   not have, a member a change removes (and nothing puts back) that version N + 1 still
///   has, a to_double where N + 1 reads no double, a wrap where it reads no array.
///
/// A place the shapes cannot tell about (`any`, a key of a map) is not checked. Paths are
/// relative to the data, as the changes' are, and the shapes are of the data
/// (for a mod's step, see [`check_mod_against`]).
pub(crate) fn check_against(
    changes: &[Change],
    before: &Shape,
    after: Option<&Shape>,
) -> Result<(), String> {
    Declaration::new(changes).map_err(|i| format!("change {}: {}", i.index, i.message))?;
    let mut shape = before.clone();
    // Paths the changes made and removed, checked against `after` at the end.
    let mut made: Vec<(usize, Vec<Part>)> = Vec::new();
    let mut removed: Vec<(usize, Vec<Part>)> = Vec::new();
    let mut reshaped: Vec<(usize, Vec<Part>)> = Vec::new();
    for (index, change) in changes.iter().enumerate() {
        let fail = |why: String| format!("change {index} ({change}): {why}");
        let at = parse(change.path()).map_err(fail)?;
        apply(change, &at, &mut shape).map_err(fail)?;
        match change {
            Change::Add { .. } => made.push((index, at)),
            Change::Rename { to, .. } => {
                let mut target = at.clone();
                *target.last_mut().expect("a path has parts") = Part::Key(to.clone());
                removed.push((index, at));
                made.push((index, target));
            }
            Change::Move { to, .. } => {
                removed.push((index, at));
                made.push((index, parse(to).map_err(fail)?));
            }
            Change::Drop { .. } => removed.push((index, at)),
            Change::ToDouble { .. } | Change::Wrap { .. } => reshaped.push((index, at)),
            Change::Unwrap { .. } => {}
        }
    }
    let Some(after) = after else {
        return Ok(());
    };
    let fail = |index: usize, why: String| format!("change {index} ({}): {why}", changes[index]);
    for (index, path) in &made {
        // Renamed or dropped again by a later change: the end is what counts.
        if present(&shape, path) == Some(true) && present(after, path) == Some(false) {
            return Err(fail(
                *index,
                format!(
                    "the shape of the next version has no {}: the step makes a member the game \
                     does not read",
                    show(path)
                ),
            ));
        }
    }
    for (index, path) in &removed {
        if present(&shape, path) == Some(false) && present(after, path) == Some(true) {
            return Err(fail(
                *index,
                format!(
                    "the shape of the next version still has {}: the step removes a member the \
                     game reads",
                    show(path)
                ),
            ));
        }
    }
    for (index, path) in &reshaped {
        let mut after = after.clone();
        let reach = reach(&mut after, path);
        let wanted = match changes[*index] {
            Change::ToDouble { .. } => "a double",
            _ => "an array",
        };
        let fits = |s: &Shape| match changes[*index] {
            Change::ToDouble { .. } => matches!(s, Shape::Double | Shape::Null | Shape::Any),
            _ => matches!(s, Shape::Array(_) | Shape::Tuple(_) | Shape::Any),
        };
        let wrong = reach
            .found
            .into_iter()
            .flat_map(|s| leaves_of(s, !matches!(changes[*index], Change::Wrap { .. })))
            .find(|s| !fits(s));
        if let Some(wrong) = wrong {
            return Err(fail(
                *index,
                format!(
                    "the shape of the next version reads {} at {}, not {wanted}",
                    wrong.describe(),
                    show(path)
                ),
            ));
        }
    }
    Ok(())
}

/// [`check_against`] for a step of the mod `name`, whose shapes describe
/// `data.mods.<name>`: only the changes under `mods.<name>` are checked, by their paths
/// below it (a mod's step may change the game's data too, which its shapes do not
/// describe).
pub(crate) fn check_mod_against(
    name: &str,
    changes: &[Change],
    before: &Shape,
    after: Option<&Shape>,
) -> Result<(), String> {
    Declaration::new(changes).map_err(|i| format!("change {}: {}", i.index, i.message))?;
    let prefix = [Part::Key("mods".into()), Part::Key(name.into())];
    let below = |path: &str| -> Option<String> {
        let parts = parse(path).ok()?;
        let rest = parts.strip_prefix(&prefix[..])?;
        (!rest.is_empty()).then(|| show(rest))
    };
    let mut inside = Vec::new();
    let mut indexes = Vec::new();
    for (index, change) in changes.iter().enumerate() {
        let Some(path) = below(change.path()) else {
            continue;
        };
        let moved = match change {
            Change::Add { default, .. } => Change::add(&path, default.clone()),
            Change::Rename { to, .. } => Change::rename(&path, to),
            // A move out of the mod's part, or into it, is checked on its side alone.
            Change::Move { to, .. } => match below(to) {
                Some(to) => Change::moved(&path, &to),
                None => Change::drop(&path, "moved out"),
            },
            Change::Drop { reason, .. } => Change::drop(&path, reason),
            Change::ToDouble { .. } => Change::to_double(&path),
            Change::Wrap { .. } => Change::wrap(&path),
            Change::Unwrap { .. } => Change::unwrap(&path),
        };
        inside.push(moved);
        indexes.push(index);
    }
    check_against(&inside, before, after).map_err(|e| {
        // Back to the step's own numbering and paths.
        let (number, rest) = e
            .strip_prefix("change ")
            .and_then(|r| r.split_once(' '))
            .unwrap_or(("", &e));
        match number.parse::<usize>() {
            Ok(i) => {
                let why = rest.split_once("): ").map_or(rest, |(_, why)| why);
                format!(
                    "change {} ({}): {why} (in the mod's data, data.mods.{name})",
                    indexes[i], changes[indexes[i]]
                )
            }
            Err(_) => e.clone(),
        }
    })
}

/// The shapes a path reaches, and whether it went through a place the shape cannot tell
/// about (`any`, a key of a map).
struct Reach<'s> {
    found: Vec<&'s mut Shape>,
    unknown: bool,
}

fn reach<'s>(shape: &'s mut Shape, parts: &[Part]) -> Reach<'s> {
    let mut out = Reach {
        found: Vec::new(),
        unknown: false,
    };
    reach_into(shape, parts, &mut out);
    out
}

fn reach_into<'s>(shape: &'s mut Shape, parts: &[Part], out: &mut Reach<'s>) {
    let Some((part, rest)) = parts.split_first() else {
        out.found.push(shape);
        return;
    };
    match (part, shape) {
        (_, Shape::Any) => out.unknown = true,
        (_, Shape::Nullable(inner)) => reach_into(inner, parts, out),
        (_, Shape::OneOf(shapes)) => {
            for shape in shapes {
                reach_into(shape, parts, out);
            }
        }
        (Part::Key(key), Shape::Object(object)) => {
            if let Some(member) = object.members.get_mut(key) {
                reach_into(&mut member.shape, rest, out);
            }
        }
        // A key of a map is data: it may be there or not.
        (Part::Key(_), Shape::Map(value)) => {
            out.unknown = true;
            reach_into(value, rest, out);
        }
        (Part::Each, Shape::Array(element)) | (Part::EachValue, Shape::Map(element)) => {
            reach_into(element, rest, out)
        }
        (Part::Each, Shape::Tuple(elements)) => {
            for element in elements {
                reach_into(element, rest, out);
            }
        }
        (Part::EachValue, Shape::Object(object)) => {
            for member in object.members.values_mut() {
                reach_into(&mut member.shape, rest, out);
            }
        }
        _ => {}
    }
}

/// The shapes a value of `shape` may have, through `null or` (when `through_null`) and
/// `one of`.
fn leaves_of(shape: &mut Shape, through_null: bool) -> Vec<&mut Shape> {
    let descend = match shape {
        Shape::OneOf(_) => true,
        Shape::Nullable(_) => through_null,
        _ => false,
    };
    if !descend {
        return vec![shape];
    }
    match shape {
        Shape::Nullable(inner) => leaves_of(inner, through_null),
        Shape::OneOf(shapes) => shapes
            .iter_mut()
            .flat_map(|s| leaves_of(s, through_null))
            .collect(),
        _ => unreachable!("descended only into these"),
    }
}

/// The object shapes that hold the member at the end of `parts`, and whether the shape
/// cannot tell about some place on the way.
fn holders<'s>(shape: &'s mut Shape, parts: &[Part]) -> (Vec<&'s mut Object>, bool) {
    let reach = reach(shape, &parts[..parts.len() - 1]);
    let mut unknown = reach.unknown;
    let mut objects = Vec::new();
    for found in reach.found {
        for leaf in leaves_of(found, true) {
            match leaf {
                Shape::Object(object) => objects.push(object),
                Shape::Any | Shape::Map(_) => unknown = true,
                _ => {}
            }
        }
    }
    (objects, unknown)
}

fn last_key(parts: &[Part]) -> &str {
    match parts.last() {
        Some(Part::Key(key)) => key,
        _ => unreachable!("a member's path ends with its name"),
    }
}

/// Whether `shape` has the member or value at `parts`: `None` when it cannot tell.
fn present(shape: &Shape, parts: &[Part]) -> Option<bool> {
    let mut shape = shape.clone();
    match parts.last() {
        Some(Part::Key(key)) => {
            let (objects, unknown) = holders(&mut shape, parts);
            if objects.iter().any(|o| o.members.contains_key(key)) {
                Some(true)
            } else if unknown {
                None
            } else {
                Some(false)
            }
        }
        _ => {
            let reach = reach(&mut shape, parts);
            match (reach.found.is_empty(), reach.unknown) {
                (false, _) => Some(true),
                (true, true) => None,
                (true, false) => Some(false),
            }
        }
    }
}

/// What the shape of the place before the change lacks, in words.
fn lacks(shape: &Shape, parts: &[Part]) -> String {
    let parent = &parts[..parts.len() - 1];
    if !parent.is_empty() && present(shape, parent) == Some(false) {
        return format!("the recorded shape has no {}", show(parent));
    }
    let mut copy = shape.clone();
    let (objects, _) = holders(&mut copy, parts);
    let mut names: Vec<&str> = objects
        .iter()
        .flat_map(|o| o.members.keys().map(String::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    let there = if names.is_empty() {
        String::new()
    } else {
        format!(" (its members there: {})", names.join(", "))
    };
    format!("the recorded shape has no {}{there}", show(parts))
}

/// Follows `change` on `shape`, or says how it contradicts it.
fn apply(change: &Change, at: &[Part], shape: &mut Shape) -> Result<(), String> {
    let snapshot = shape.clone();
    let missing = || lacks(&snapshot, at);
    match change {
        Change::Add { .. } => {
            let key = last_key(at);
            let (objects, _) = holders(shape, at);
            if objects.iter().any(|o| o.members.contains_key(key)) {
                return Err(format!(
                    "the recorded shape has {} already: an add is for a new member",
                    show(at)
                ));
            }
            for object in objects {
                // What the default is the next version's shape says; here, anything.
                object
                    .members
                    .insert(key.to_string(), Member::required(Shape::Any));
            }
        }
        Change::Rename { to, .. } => {
            let key = last_key(at);
            let (objects, unknown) = holders(shape, at);
            let mut renamed = false;
            for object in objects {
                if object.members.contains_key(to) {
                    let mut target = at.to_vec();
                    *target.last_mut().expect("parts") = Part::Key(to.clone());
                    return Err(format!(
                        "the recorded shape has {} already: the rename would clash with it",
                        show(&target)
                    ));
                }
                if let Some(member) = object.members.remove(key) {
                    object.members.insert(to.clone(), member);
                    renamed = true;
                }
            }
            if !renamed && !unknown {
                return Err(missing());
            }
        }
        Change::Drop { .. } => {
            let key = last_key(at);
            let (objects, unknown) = holders(shape, at);
            let mut dropped = false;
            for object in objects {
                dropped |= object.members.remove(key).is_some();
            }
            if !dropped && !unknown {
                return Err(missing());
            }
        }
        Change::Move { to, .. } => {
            let to = parse(to)?;
            let key = last_key(at);
            let (objects, unknown) = holders(shape, at);
            let mut taken = None;
            for object in objects {
                if let Some(member) = object.members.remove(key) {
                    taken.get_or_insert(member);
                }
            }
            let Some(member) = taken else {
                return match unknown {
                    true => Ok(()),
                    false => Err(missing()),
                };
            };
            if present(shape, &to) == Some(true) {
                return Err(format!(
                    "the recorded shape has {} already: the move would overwrite it",
                    show(&to)
                ));
            }
            put(shape, &to, member);
        }
        Change::ToDouble { .. } => {
            let reach = reach(shape, at);
            if reach.found.is_empty() && !reach.unknown {
                return Err(missing());
            }
            for found in reach.found {
                for leaf in leaves_of(found, true) {
                    match leaf {
                        Shape::Int(_) => *leaf = Shape::Double,
                        Shape::Double | Shape::Null | Shape::Any => {}
                        other => {
                            return Err(format!(
                                "the recorded shape reads {} at {}, not an integer",
                                other.describe(),
                                show(at)
                            ))
                        }
                    }
                }
            }
        }
        Change::Wrap { .. } => {
            let reach = reach(shape, at);
            if reach.found.is_empty() && !reach.unknown {
                return Err(missing());
            }
            for found in reach.found {
                let inner = std::mem::replace(found, Shape::Any);
                *found = Shape::Array(Box::new(inner));
            }
        }
        Change::Unwrap { .. } => {
            let reach = reach(shape, at);
            if reach.found.is_empty() && !reach.unknown {
                return Err(missing());
            }
            for found in reach.found {
                let element = match found {
                    Shape::Array(element) => std::mem::replace(&mut **element, Shape::Any),
                    Shape::Tuple(elements) if elements.len() == 1 => elements.remove(0),
                    Shape::Any => Shape::Any,
                    other => {
                        return Err(format!(
                            "the recorded shape reads {} at {}, not an array of one element",
                            other.describe(),
                            show(at)
                        ))
                    }
                };
                *found = element;
            }
        }
    }
    Ok(())
}

/// Puts `member` at `to` in `shape`, making the objects on the way (as a move does).
fn put(shape: &mut Shape, to: &[Part], member: Member) {
    let (last, parents) = to.split_last().expect("a path has parts");
    let Part::Key(key) = last else {
        unreachable!("a move's target ends with a member's name")
    };
    put_into(shape, parents, key, &member);
}

fn put_into(shape: &mut Shape, parents: &[Part], key: &str, member: &Member) {
    match parents.split_first() {
        None => {
            for leaf in leaves_of(shape, true) {
                if let Shape::Object(object) = leaf {
                    object.members.insert(key.to_string(), member.clone());
                }
            }
        }
        Some((Part::Key(name), rest)) => {
            for leaf in leaves_of(shape, true) {
                if let Shape::Object(object) = leaf {
                    let next = object
                        .members
                        .entry(name.clone())
                        .or_insert_with(|| Member::required(Shape::Object(Object::default())));
                    put_into(&mut next.shape, rest, key, member);
                }
            }
        }
        Some((each, rest)) => {
            for found in reach(shape, std::slice::from_ref(each)).found {
                put_into(found, rest, key, member);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn shape(json: &str) -> Shape {
        json.parse().unwrap()
    }

    const V1: &str = r#"{"object": {
        "player": {"object": {"reputation": "double", "credits": "i64",
                              "tutorial_done": "bool", "pet": {"optional": {"nullable": {"object": {"hp": "u8"}}}}}},
        "ship": {"object": {"cargo": {"array": {"object": {"qty": "u32", "item": "string"}}},
                            "tags": {"array": "string"}}},
        "systems": {"map": {"object": {"x": "i64"}}},
        "lua": "any"
    }}"#;

    fn check(changes: Vec<Change>) -> Result<(), String> {
        check_against(&changes, &shape(V1), None)
    }

    #[test]
    fn changes_that_fit_the_shape_pass() {
        check(vec![
            Change::rename("player.reputation", "standing"),
            Change::moved("player.credits", "player.wallet.credits"),
            Change::to_double("player.wallet.credits"),
            Change::add("ship.shield", Value::Double(100.0)),
            Change::drop("player.tutorial_done", "gone"),
            Change::rename("ship.cargo[].qty", "count"),
            Change::to_double("ship.cargo[].count"),
            Change::to_double("systems[*].x"),
            Change::rename("player.pet.hp", "health"),
            Change::wrap("ship.tags[]"),
            Change::unwrap("ship.tags[]"),
            // What the shape cannot tell about is not checked.
            Change::rename("lua.missions.active", "log"),
            Change::add("systems.sol.visited", Value::Bool(true)),
        ])
        .unwrap();
    }

    #[test]
    fn changes_that_contradict_the_shape_fail() {
        let error = |change: Change| check(vec![change]).unwrap_err();
        assert_eq!(
            error(Change::rename("player.hp", "health")),
            "change 0 (rename player.hp to health): the recorded shape has no player.hp \
             (its members there: credits, pet, reputation, tutorial_done)"
        );
        assert_eq!(
            error(Change::drop("hero.mana", "gone")),
            "change 0 (drop hero.mana (gone)): the recorded shape has no hero"
        );
        assert_eq!(
            error(Change::add("player.credits", Value::Int(0))),
            "change 0 (add player.credits (default 0)): the recorded shape has player.credits \
             already: an add is for a new member"
        );
        assert_eq!(
            error(Change::rename("player.credits", "reputation")),
            "change 0 (rename player.credits to reputation): the recorded shape has \
             player.reputation already: the rename would clash with it"
        );
        assert_eq!(
            error(Change::moved("player.credits", "player.reputation")),
            "change 0 (move player.credits to player.reputation): the recorded shape has \
             player.reputation already: the move would overwrite it"
        );
        assert_eq!(
            error(Change::to_double("ship.cargo[].item")),
            "change 0 (ship.cargo[].item to a double): the recorded shape reads text at \
             ship.cargo[].item, not an integer"
        );
        assert!(error(Change::to_double("ship.cargo[].mass")).contains("has no ship.cargo[].mass"));
        assert!(error(Change::wrap("ship.hull")).contains("has no ship.hull"));
        assert!(error(Change::unwrap("player.credits")).contains("not an array of one element"));
        // Followed in order: after a rename, the old name is gone.
        let both = check(vec![
            Change::rename("player.credits", "gold"),
            Change::to_double("player.credits"),
        ]);
        assert!(both.unwrap_err().starts_with("change 1 "));
    }

    #[test]
    fn the_next_versions_shape_is_what_the_changes_make() {
        let before = shape(r#"{"object": {"hp": "u8", "mana": "u8", "gold": "i64"}}"#);
        let changes = vec![
            Change::rename("hp", "health"),
            Change::drop("mana", "magic is gone"),
            Change::to_double("gold"),
        ];
        let after = shape(r#"{"object": {"health": "u8", "gold": "double"}}"#);
        check_against(&changes, &before, Some(&after)).unwrap();
        let error =
            |after: &str| check_against(&changes, &before, Some(&shape(after))).unwrap_err();
        assert_eq!(
            error(r#"{"object": {"hp": "u8", "gold": "double"}}"#),
            "change 0 (rename hp to health): the shape of the next version has no health: the \
             step makes a member the game does not read"
        );
        assert_eq!(
            error(r#"{"object": {"health": "u8", "mana": "u8", "gold": "double"}}"#),
            "change 1 (drop mana (magic is gone)): the shape of the next version still has \
             mana: the step removes a member the game reads"
        );
        assert_eq!(
            error(r#"{"object": {"health": "u8", "gold": "i64"}}"#),
            "change 2 (gold to a double): the shape of the next version reads an integer from \
             -9223372036854775808 to 9223372036854775807 at gold, not a double"
        );
    }

    #[test]
    fn a_mods_changes_are_checked_below_its_namespace() {
        let before = shape(r#"{"object": {"notes": {"array": "string"}}}"#);
        check_mod_against(
            "cartographer",
            &[
                Change::rename("mods.cartographer.notes", "records"),
                Change::add("player.maps", Value::Int(0)),
            ],
            &before,
            None,
        )
        .unwrap();
        let error = check_mod_against(
            "cartographer",
            &[
                Change::add("player.maps", Value::Int(0)),
                Change::drop("mods.cartographer.route", "x"),
            ],
            &before,
            None,
        )
        .unwrap_err();
        assert_eq!(
            error,
            "change 1 (drop mods.cartographer.route (x)): the recorded shape has no route (its \
             members there: notes) (in the mod's data, data.mods.cartographer)"
        );
    }
}
