//! The workers' groups of saves, committed together: a worker whose group is ready hands it
//! over, and whoever hands one over while no commit runs commits every group waiting, the
//! others' included, with one flush (group commit).
//!
//! A worker that hands its group over while another commits goes back to its upgrades: the
//! committing worker takes the group with the next commit, which starts after the group's
//! files were written. So on two cores one worker upgrades while the other waits for the
//! disk, and a flush serves every worker's group instead of each worker flushing its own
//! (on Linux a `syncfs` flushes the whole file system: two at once wait on each other and
//! write the same things).

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::upgrade::WriteGroup;

/// The groups waiting for a commit, and whether a worker is committing.
pub(super) struct Commits<K> {
    state: Mutex<State<K>>,
    /// Signalled when the committing worker takes the groups waiting.
    taken: Condvar,
    /// How many groups may wait while a worker commits; a worker with one more waits until
    /// they are taken. Two at least, or no commit would ever serve more than one group.
    /// Each group holds its saves locked and its temporaries open (three descriptors a save
    /// in place), so the groups alive at once, those being filled, those waiting and those
    /// being committed, twice as many as the workers from four workers on, stay within the
    /// usual limit of 1,024 open files at eight workers.
    limit: usize,
}

struct State<K> {
    waiting: Vec<WriteGroup<K>>,
    committing: bool,
}

impl<K> Commits<K> {
    /// For `workers` workers.
    pub(super) fn new(workers: usize) -> Commits<K> {
        Commits {
            state: Mutex::new(State {
                waiting: Vec::new(),
                committing: false,
            }),
            taken: Condvar::new(),
            limit: (workers / 2).max(2),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `group` over to be committed. When no other worker is committing, this one
    /// does: `commit` is called with every group waiting, merged into one, again and again
    /// until none waits. Otherwise it returns at once (the committing worker takes the
    /// group), unless `limit` groups wait already: then it first waits until they are
    /// taken.
    ///
    /// Every group handed over is committed before the last worker's `hand_over` returns:
    /// while groups wait, a worker is committing, and it stops only when none waits.
    pub(super) fn hand_over(&self, group: WriteGroup<K>, commit: impl Fn(WriteGroup<K>)) {
        if group.is_empty() {
            return;
        }
        #[cfg(test)]
        for source in group.sources() {
            let dir = source.parent().unwrap_or(std::path::Path::new("."));
            let _ = crate::fsio::watch::record(dir, "hand over", source);
        }
        let mut state = self.lock();
        while state.committing && state.waiting.len() >= self.limit {
            state = self.taken.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.waiting.push(group);
        if state.committing {
            return;
        }
        state.committing = true;
        // Should `commit` panic, the others must not wait for this worker forever.
        let committing = Committing(self);
        loop {
            let mut groups = std::mem::take(&mut state.waiting).into_iter();
            let Some(mut merged) = groups.next() else {
                break;
            };
            groups.for_each(|g| merged.absorb(g));
            drop(state);
            self.taken.notify_all();
            commit(merged);
            state = self.lock();
        }
        // Under the same lock as the look that found none waiting: a group handed over
        // after it finds no worker committing, and its worker commits it.
        state.committing = false;
        drop(state);
        std::mem::forget(committing);
        self.taken.notify_all();
    }
}

/// Ends a worker's commits should one panic.
struct Committing<'a, K>(&'a Commits<K>);

impl<K> Drop for Committing<'_, K> {
    fn drop(&mut self) {
        self.0.lock().committing = false;
        self.0.taken.notify_all();
    }
}
