//! The registry in a model provider's dialect (see [`crate::adapter`]), and
//! calls a model made under it mapped back to the registry's names and the
//! servers' own schemas.
//!
//! Conversions are cached twice: each tool keeps its conversion per dialect for
//! as long as its server's list does ([`Tool::adapted`]), and the whole
//! registry's adaptation (names fitted across every tool) is kept per dialect
//! until the registry is rebuilt. Listing the same registry again in a dialect
//! converts nothing; a server whose list changed costs the conversion of its own
//! tools and the fitting of every name.

use super::*;
use crate::adapter::{self, Adaptation, Dialect};

impl<P: Platform> Manager<P> {
    /// Every offered tool in `dialect`, in registry order: the tools that could
    /// be represented, and the ones that could not with why.
    pub fn adapted_tools(&mut self, dialect: Dialect) -> Rc<Adaptation> {
        self.sync_registry();
        let generation = self.registry.current.generation();
        if let Some((made, adaptation)) = self.registry.adaptations.get(&dialect)
            && *made == generation
        {
            return adaptation.clone();
        }
        let entries = self.registry.current.entries();
        let adaptation = Rc::new(adapter::adapt_converted(
            dialect,
            entries.iter().map(|e| e.tool.name.as_str()),
            entries.iter().map(|e| e.tool.adapted(dialect)),
        ));
        self.registry
            .adaptations
            .insert(dialect, (generation, adaptation.clone()));
        adaptation
    }

    /// A call a model made under `dialect`: the registry name its adapted name
    /// maps back to (a name that is no adapted name is taken as a registry name,
    /// so a server's tools that are kept while it restarts stay callable), and
    /// its arguments as the tool's own schema expects them (see
    /// [`adapter::map_arguments_back`]). The arguments are left as they came
    /// when they are not JSON, or the dialect changes nothing about instances:
    /// the call's own check then says what is wrong, against the original schema.
    pub fn map_adapted_call(
        &mut self,
        dialect: Dialect,
        tool: &str,
        arguments: &str,
    ) -> (String, String) {
        let adaptation = self.adapted_tools(dialect);
        let name = adaptation.registry_name(tool).unwrap_or(tool).to_string();
        let arguments = self.map_adapted_arguments(dialect, &name, arguments);
        (name, arguments)
    }

    /// The arguments of a call of the registry's tool `name` that a model wrote
    /// under `dialect`, as the tool's own schema expects them (see
    /// [`Manager::map_adapted_call`]).
    pub fn map_adapted_arguments(&self, dialect: Dialect, name: &str, arguments: &str) -> String {
        if !matches!(dialect, Dialect::OpenAiStrict | Dialect::Gemini)
            || arguments.trim().is_empty()
        {
            return arguments.to_string();
        }
        let Some(entry) = self
            .registry
            .current
            .get(name)
            .or_else(|| self.registry.current.kept(name))
        else {
            return arguments.to_string();
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(arguments) else {
            return arguments.to_string();
        };
        let mapped = adapter::map_arguments_back(dialect, &entry.tool.def.input_schema, value);
        serde_json::to_string(&mapped).unwrap_or_else(|_| arguments.to_string())
    }

    /// [`Manager::start_call`] of a call a model made under `dialect` (see
    /// [`Manager::map_adapted_call`]).
    pub fn start_adapted_call(
        &mut self,
        dialect: Dialect,
        tool: &str,
        arguments: &str,
        options: CallOptions,
    ) -> Result<u64, CallError> {
        self.start_adapted_call_as(dialect, tool, arguments, options, None)
    }

    /// [`Manager::start_adapted_call`] under the permission profile `profile`
    /// (see [`Manager::start_call_as`]).
    pub fn start_adapted_call_as(
        &mut self,
        dialect: Dialect,
        tool: &str,
        arguments: &str,
        options: CallOptions,
        profile: Option<&str>,
    ) -> Result<u64, CallError> {
        let (name, arguments) = self.map_adapted_call(dialect, tool, arguments);
        self.start_call_as(&name, &arguments, options, profile)
    }
}
