//! Roots, as the client offers them (see [`crate::roots`]).
//!
//! 2025 sessions: the `roots` capability (with `listChanged`) is declared in
//! `initialize` only when the server has roots then; `roots/list` is answered
//! with them, and a change sends `notifications/roots/list_changed`. A server
//! that was initialized without the capability never asks: gaining roots needs
//! a new session, which the manager opens ([`Client::set_roots`] says so).
//! 2026-07-28: capabilities go with every request, so `roots: {}` is declared
//! on each request while there are roots, and a `roots/list` entry of an
//! `input_required` result is answered at once, with no one asked; nothing is
//! sent on a change (that revision has no such notification).

use crate::prelude::*;

use super::{Client, Era};
use crate::jsonrpc;
use crate::methods;
use crate::roots::{self, Root};

/// The roots of one session.
#[derive(Debug, Default)]
pub(super) struct Roots {
    /// The roots the server gets.
    pub(super) list: Vec<Root>,
    /// Whether `initialize` declared the `roots` capability (2025 sessions).
    pub(super) offered: bool,
}

impl Client {
    /// The roots the server is told about when the session starts. Call before
    /// [`Client::detect`] / [`Client::begin`].
    pub fn set_initial_roots(&mut self, roots: Vec<Root>) {
        self.roots.list = roots;
    }

    /// The server's roots changed (the embedder's, or a reload). Returns true when
    /// the server can learn of them only in a new session: a 2025 server
    /// initialized without the `roots` capability, which now has roots.
    pub fn set_roots(&mut self, roots: Vec<Root>) -> bool {
        if roots == self.roots.list {
            return false;
        }
        self.roots.list = roots;
        if self.era == Era::Stateless {
            return false;
        }
        if !self.roots.offered {
            return !self.roots.list.is_empty();
        }
        if self.protocol_version.is_some() {
            self.notify::<()>(methods::ROOTS_LIST_CHANGED, None);
        }
        false
    }

    /// The roots the server gets now.
    pub fn roots(&self) -> &[Root] {
        &self.roots.list
    }

    /// The `roots` capability for the era in use, when there is one to declare.
    pub(super) fn roots_capability(&self) -> Option<serde_json::Value> {
        match self.era {
            Era::Stateless if !self.roots.list.is_empty() => Some(serde_json::json!({})),
            Era::Legacy if self.roots.offered => Some(serde_json::json!({"listChanged": true})),
            _ => None,
        }
    }

    /// A 2025 server's `roots/list` (only when the capability was declared).
    pub(super) fn on_roots_request(&mut self, r: &jsonrpc::Request) {
        let result = roots::list_result(&self.roots.list);
        self.respond(jsonrpc::result_response(&r.id, &result));
    }
}
