//! The parts of a document lent to Lua and not yet touched, each in a slot a lent table
//! names, taken back by the conversion from Lua where it meets a lent table (`from_lua.rs`);
//! and what the tables filled since were, which that conversion rebuilds in place where the
//! Lua table still holds the same. Lending itself, the tables and their filling, is
//! `lazy.rs`.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use crate::value::{Table, Value};

/// The parts of a document lent to Lua and not yet touched, by slot. A slot is taken when
/// its table is filled or the loan ends.
#[derive(Debug)]
pub(crate) struct Loan {
    /// Counts loans, so that a table kept from an earlier one is known as such.
    generation: u32,
    slots: Vec<Option<Value>>,
    /// What each filled table was filled from (its own lent tables taken out, `null` in
    /// their place), by the table's address: the conversion back compares the table with
    /// it and keeps what is the same, rather than making it all again. Only ever a guess:
    /// a table collected and another made at its address finds the first one's value,
    /// which the comparison then does not match.
    filled: FxHashMap<usize, Value>,
    /// Tables of at most this many values are converted with the table they are in rather
    /// than lent ([`LEND_ABOVE`]; tests set 0 to lend every table).
    pub(crate) lend_above: usize,
}

/// Tables of at most this many values, counting everything in them, are converted with the
/// table they are in rather than lent: lending and filling a table costs a few
/// microseconds, as much as converting a dozen values, and a step that touches a table
/// usually goes on into its small tables (a planet's position, a ship's cargo). Measured on
/// the half chain of `benches/upgrade.rs`: 8 and 32 were slower, 64 much slower.
pub(crate) const LEND_ABOVE: usize = 16;

impl Default for Loan {
    fn default() -> Loan {
        Loan {
            generation: 0,
            slots: Vec::new(),
            filled: FxHashMap::default(),
            lend_above: LEND_ABOVE,
        }
    }
}

/// The loan of a Lua state, shared by the conversions and the materializing function.
pub(crate) type SharedLoan = Rc<RefCell<Loan>>;

/// How a table's place in a loan is written in the lent table: the loan's generation above,
/// the slot below.
fn slot_key(generation: u32, slot: usize) -> i64 {
    (i64::from(generation) << 32) | slot as i64
}

impl Loan {
    /// Puts `value` in a new slot; returns the key its lent table keeps.
    pub(crate) fn lend(&mut self, value: Value) -> i64 {
        self.slots.push(Some(value));
        slot_key(self.generation, self.slots.len() - 1)
    }

    /// The value of the slot `key` names, taken (the table is being filled) or copied
    /// (converted elsewhere while the table stays lent); `None` for a key of another loan
    /// or a slot taken already.
    pub(crate) fn get(&mut self, key: i64, take: bool) -> Option<Value> {
        if (key >> 32) as u32 != self.generation {
            return None;
        }
        let slot = self.slots.get_mut((key & 0xffff_ffff) as usize)?;
        if take {
            slot.take()
        } else {
            slot.clone()
        }
    }

    /// Puts `value` back in the slot `key` names, which a walk took it from and must walk
    /// again; nothing for a key of another loan.
    pub(crate) fn put_back(&mut self, key: i64, value: Value) {
        if (key >> 32) as u32 != self.generation {
            return;
        }
        if let Some(slot) = self.slots.get_mut((key & 0xffff_ffff) as usize) {
            *slot = Some(value);
        }
    }

    /// Keeps `value`, what the table at `address` was just filled from.
    pub(crate) fn keep_filled(&mut self, address: usize, value: Value) {
        self.filled.insert(address, value);
    }

    /// What the table at `address` was filled from, if it was filled in this loan (or
    /// another table was, that was at the same address then).
    pub(crate) fn take_filled(&mut self, address: usize) -> Option<Value> {
        if self.filled.is_empty() {
            return None;
        }
        self.filled.remove(&address)
    }

    /// Whether `value`, met as a member of a table being filled, gets a lent table of its
    /// own rather than being converted with it: a non-empty array or object of more than
    /// `lend_above` values.
    pub(crate) fn worth_lending(&self, value: &Value) -> bool {
        let non_empty = match value {
            Value::Array(items) => !items.is_empty(),
            Value::Object(map) => !map.is_empty(),
            _ => false,
        };
        non_empty && !fits(value, &mut { self.lend_above })
    }

    /// How many lent values are still in the loan (their tables not filled).
    #[cfg(test)]
    pub(crate) fn still_lent(&self) -> usize {
        self.slots.iter().filter(|slot| slot.is_some()).count()
    }

    /// Ends the loan: tables of it still in Lua are dead (touching them is an error).
    pub(crate) fn end(&mut self) {
        self.slots.clear();
        self.filled.clear();
        self.generation = self.generation.wrapping_add(1);
    }
}

/// Whether `value` holds at most `budget` values, itself included; counts down `budget` and
/// stops as soon as it runs out.
fn fits(value: &Value, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    // Each member counts itself and, a table, its own members at least: a table whose
    // members count more than the budget left does not fit, known from them alone, without
    // reading inside any (which are yet to be read from memory, and when the table is lent
    // are not read now).
    match value {
        Value::Array(items) => {
            items.len() <= *budget
                && items.iter().map(least_count).sum::<usize>() <= *budget
                && items.iter().all(|v| member_fits(v, budget))
        }
        Value::Object(map) => {
            map.len() <= *budget
                && map.values().map(least_count).sum::<usize>() <= *budget
                && map.values().all(|v| member_fits(v, budget))
        }
        Value::Table(table) => match &**table {
            Table::Keyed(entries) => entries
                .iter()
                .all(|(k, v)| member_fits(k, budget) && member_fits(v, budget)),
            Table::Class { value, .. } | Table::Shared { value, .. } => fits(value, budget),
            Table::Ref(_) => true,
        },
        _ => true,
    }
}

/// What [`fits`] counts for `value` at least: itself, and an array's or object's members.
#[inline]
fn least_count(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
        _ => 0,
    }
}

/// [`fits`] for a member: a scalar, most of them, counted without a call.
#[inline]
fn member_fits(value: &Value, budget: &mut usize) -> bool {
    match value {
        Value::Array(_) | Value::Object(_) | Value::Table(_) => fits(value, budget),
        _ if *budget == 0 => false,
        _ => {
            *budget -= 1;
            true
        }
    }
}
