//! What a change by hand ([`edit`](crate::edit)) may do beyond putting a value in place of
//! one of the same kind; apart from `edit` so that errors can say what a refusal wanted
//! without `error` and `edit` importing each other.

/// What a change by hand may do besides putting a value in place of one of the same kind:
/// [`Allow::default`] allows no new member, no change of kind, no change of a version and
/// no value the game does not read.
/// A refusal for want of one of these says which
/// ([`Error::refused_unless`](crate::Error::refused_unless)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Allow {
    /// The path's last key may be a new member of its object.
    pub new_member: bool,
    /// A value may take another kind than the one it replaces (an integer a double, a
    /// double a string): the value is then taken as given, with no double kept, so that
    /// the same call with the old value undoes it. Without it, such a change is refused,
    /// since a game that reads the old kind fails on the new one, but where a chain's
    /// recorded shape says the game reads the new value at its place
    /// ([`set_shaped`](crate::edit::set_shaped)): that is a fix, not a change of kind.
    pub kind_change: bool,
    /// `meta.version`, or a mod's `meta.mods.<name>.version`, may change. A version says
    /// which upgrade steps the data has had: raised by hand, the next upgrade skips the
    /// steps between, on data that never had them; lowered, it runs steps again on data
    /// that has them. So without it such a change is refused, naming the steps; upgrading
    /// is what brings a save up to date. Even with it, a version below the one
    /// `meta.history` records an upgrade to is refused.
    pub version_change: bool,
    /// The changed save may hold what the game does not read at its version, by the shapes
    /// recorded for the chain ([`check_shape`](crate::edit::check_shape)): a value of a
    /// kind or range the game does not read there, a member missing that it needs, a
    /// member it would drop. Without it, such a change is refused, naming each place and
    /// what the game reads there.
    pub shape_mismatch: bool,
}

impl Allow {
    /// The same, allowing a new member.
    pub fn with_new_member(mut self) -> Allow {
        self.new_member = true;
        self
    }

    /// The same, allowing a change of kind.
    pub fn with_kind_change(mut self) -> Allow {
        self.kind_change = true;
        self
    }

    /// The same, allowing a change of a version.
    pub fn with_version_change(mut self) -> Allow {
        self.version_change = true;
        self
    }

    /// The same, allowing a save the game does not read as its shape says.
    pub fn with_shape_mismatch(mut self) -> Allow {
        self.shape_mismatch = true;
        self
    }

    /// What either allows.
    pub fn and(self, other: Allow) -> Allow {
        Allow {
            new_member: self.new_member || other.new_member,
            kind_change: self.kind_change || other.kind_change,
            version_change: self.version_change || other.version_change,
            shape_mismatch: self.shape_mismatch || other.shape_mismatch,
        }
    }
}
