//! The calls in flight across servers: the handle the next one gets, the slot
//! that runs each (so that a cancel reaches it and a configuration reload moves
//! it with its server), and what each call's end needs to know (see
//! `finished`). Tool calls, requests beyond tools and their parts, and calls
//! waiting for an approval all take a handle here.

use alloc::collections::BTreeMap;

use super::finished::Flight;

/// The calls in flight and the next handle.
pub(super) struct Calls {
    /// The handle the next call gets.
    next: u64,
    /// Calls in flight → the slot that runs them.
    routes: BTreeMap<u64, usize>,
    /// Calls started and not yet completed, with what their end needs to know
    /// (see `finished`).
    pub(super) flight: BTreeMap<u64, Flight>,
}

impl Default for Calls {
    fn default() -> Calls {
        Calls {
            next: 1,
            routes: BTreeMap::new(),
            flight: BTreeMap::new(),
        }
    }
}

impl Calls {
    /// The handle the next call will get, without taking it: a call refused
    /// before it starts leaves it for the next.
    pub(super) fn peek_next(&self) -> u64 {
        self.next
    }

    /// Takes the next handle.
    pub(super) fn take_next(&mut self) -> u64 {
        let call = self.next;
        self.next += 1;
        call
    }

    /// Notes that slot `i` runs call `call`.
    pub(super) fn route(&mut self, call: u64, i: usize) {
        self.routes.insert(call, i);
    }

    /// The slot that runs call `call`, while it is in flight.
    pub(super) fn slot_of(&self, call: u64) -> Option<usize> {
        self.routes.get(&call).copied()
    }

    /// Call `call` is no longer in flight on any slot.
    pub(super) fn end(&mut self, call: u64) {
        self.routes.remove(&call);
    }

    /// How many calls are in flight.
    pub(super) fn len(&self) -> usize {
        self.routes.len()
    }

    /// Moves every call to its slot's new index (`moved_to[old]`); the calls of
    /// a slot that has none are forgotten (they completed as it closed).
    pub(super) fn renumber(&mut self, moved_to: &[Option<usize>]) {
        self.routes = core::mem::take(&mut self.routes)
            .into_iter()
            .filter_map(|(call, i)| Some((call, moved_to.get(i).copied().flatten()?)))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_taken_in_order_and_routes_follow_their_slots() {
        let mut calls = Calls::default();
        assert_eq!(calls.peek_next(), 1);
        assert_eq!(calls.peek_next(), 1, "peeking takes nothing");
        assert_eq!(calls.take_next(), 1);
        assert_eq!(calls.take_next(), 2);
        calls.route(1, 0);
        calls.route(2, 2);
        calls.route(3, 1);
        assert_eq!(calls.len(), 3);
        calls.end(3);
        assert_eq!(calls.slot_of(3), None);
        // Slot 0 closed; slot 2 is now slot 0.
        calls.renumber(&[None, Some(1), Some(0)]);
        assert_eq!(calls.slot_of(1), None);
        assert_eq!(calls.slot_of(2), Some(0));
        assert_eq!(calls.len(), 1);
    }
}
