//! The registry as the manager publishes it: every offered tool's name mapped
//! to its server and definition ([`Registry`]), whether it must be rebuilt
//! before it is read, and its forms in each model provider's dialect (see
//! `adapted`). A server's tools or state changing only marks it stale: the
//! rebuild waits for the end of the round (or for a reader), one rebuild for
//! the thousands of servers that connect or fail in one round, not one each,
//! which made starting a large configuration quadratic. The rebuild from the
//! servers' slots and the manager's readers of the registry are here too.

use super::*;
use alloc::collections::BTreeMap;
use alloc::rc::Rc;

use crate::adapter::{Adaptation, Dialect};
use crate::registry::Registry;

/// The registry, whether it is stale, and its adaptations.
pub(super) struct Published {
    /// The registry as last rebuilt.
    pub(super) current: Registry,
    /// A server's tools or state changed since `current` was rebuilt.
    stale: bool,
    /// The registry in each dialect asked for, with the generation it was made
    /// from (see `adapted`).
    pub(super) adaptations: BTreeMap<Dialect, (u64, Rc<Adaptation>)>,
}

impl Default for Published {
    fn default() -> Published {
        Published {
            current: Registry::new(),
            stale: false,
            adaptations: BTreeMap::new(),
        }
    }
}

impl Published {
    /// A server's tools or state changed: rebuild before the next read.
    pub(super) fn invalidate(&mut self) {
        self.stale = true;
    }

    /// Whether it must be rebuilt; it is taken to be rebuilt from now on.
    pub(super) fn take_stale(&mut self) -> bool {
        core::mem::take(&mut self.stale)
    }

    /// Whether a change waits for a rebuild.
    pub(super) fn is_stale(&self) -> bool {
        self.stale
    }
}

impl<P: Platform> Manager<P> {
    /// Every tool, ordered by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        debug_assert!(
            !self.registry.is_stale(),
            "every public call leaves it rebuilt"
        );
        self.registry.current.tools()
    }

    /// Changes whenever the registry is rebuilt (see [`Registry::generation`]).
    pub fn tools_generation(&self) -> u64 {
        self.registry.current.generation()
    }

    /// Every tool, ordered by name, without copying: for the `tools` export,
    /// which copies each field once into its own result.
    pub fn tool_entries(&self) -> &[registry::Entry] {
        debug_assert!(
            !self.registry.is_stale(),
            "every public call leaves it rebuilt"
        );
        self.registry.current.entries()
    }

    pub(super) fn invalidate_registry(&mut self) {
        self.registry.invalidate();
    }

    /// Rebuilds the registry if a server's tools or state changed since.
    pub(super) fn sync_registry(&mut self) {
        if self.registry.take_stale() {
            self.rebuild_registry();
        }
    }

    pub(super) fn rebuild_registry(&mut self) {
        let sources: Vec<Source<'_>> = self
            .slots
            .iter()
            .filter_map(|s| {
                let standing = match s.state {
                    ServerState::Connected => Standing::Connected,
                    ServerState::Starting => Standing::Starting,
                    _ if s.tools.is_empty() => return None,
                    _ => Standing::Kept,
                };
                Some(Source {
                    server: &s.config.name,
                    segment: s.config.name_segment(),
                    tools: &s.tools,
                    standing,
                })
            })
            .collect();
        let warnings = self.registry.current.rebuild(&sources);
        self.events.extend(warnings.into_iter().map(Event::Warning));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_rebuilt_once() {
        let mut published = Published::default();
        assert!(!published.is_stale());
        published.invalidate();
        published.invalidate();
        assert!(published.is_stale());
        assert!(published.take_stale());
        assert!(
            !published.take_stale(),
            "one rebuild for every change before it"
        );
    }
}
