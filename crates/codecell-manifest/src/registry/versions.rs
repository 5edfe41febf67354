//! `versions`: every project/global version with its active/effective flags, plus the audit
//! events, with another project's source and actor ids hidden.

use super::Registry;
use crate::event_log::{Event, Operation};
use crate::manifest::{Manifest, Scope};
use serde::Serialize;
use serde_json::Value;

/// One version as `versions` shows it (the seed's `_public_version` plus flags).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionEntry {
    /// Tool name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Input schema.
    pub input_schema: Value,
    /// Output schema.
    pub output_schema: Value,
    /// Import roots.
    pub imports: Vec<String>,
    /// Scope (serialised as its name).
    pub scope: Scope,
    /// Project id or "".
    pub scope_id: Option<String>,
    /// Session manifest it was promoted from.
    pub source_manifest_id: Option<String>,
    /// Source project, hidden (None) when it is another project.
    pub source_project_id: Option<String>,
    /// Source session, hidden (None) when it is another project's.
    pub source_root_frame_id: Option<String>,
    /// Creation time.
    pub created_at: f64,
    /// Version id.
    pub manifest_id: String,
    /// Active in its scope.
    pub active: bool,
    /// What the name resolves to for this registry.
    pub effective: bool,
}

/// An audit event as `versions` shows it: actor ids hidden for another project's actors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublicEvent {
    /// Event id.
    pub event_id: String,
    /// Operation.
    pub operation: Operation,
    /// Nanosecond timestamp.
    pub created_at_ns: u64,
    /// Scope (serialised as its name).
    pub scope: Scope,
    /// Scope id.
    pub scope_id: String,
    /// Tool name.
    pub name: String,
    /// Version active after the event.
    pub manifest_id: String,
    /// For rollbacks, the version active before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_manifest_id: Option<String>,
    /// Actor session, or None for another project's.
    pub actor_root_frame_id: Option<String>,
    /// Actor project, or None for another project's.
    pub actor_project_id: Option<String>,
}

/// What `versions` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionsReport {
    /// Versions sorted by (name, scope, created_at, manifest_id).
    pub versions: Vec<VersionEntry>,
    /// Events sorted by (created_at_ns, event_id).
    pub events: Vec<PublicEvent>,
}

impl Registry {
    /// Project and global versions (or one scope's), optionally of one name.
    pub fn versions(&self, name: Option<&str>, scope: Option<Scope>) -> VersionsReport {
        self.purge_expired();
        let effective = self.effective();
        let view = self.scoped_view();
        let scopes = match scope {
            Some(s) => vec![s],
            None => vec![Scope::Project, Scope::Global],
        };
        let mut versions = Vec::new();
        let mut events = Vec::new();
        for item_scope in scopes {
            let Ok(scope_id) = self.scope_id(item_scope) else {
                continue;
            };
            let parsed = Self::versions_in(&view, item_scope, &scope_id, name);
            let active = self.active_ids(&view, item_scope, &scope_id, &parsed);
            for manifest in parsed {
                versions.push(VersionEntry {
                    active: active.get(&manifest.name) == Some(&manifest.manifest_id),
                    effective: effective
                        .get(&manifest.name)
                        .is_some_and(|m| m.manifest_id == manifest.manifest_id),
                    ..self.public_version(manifest)
                });
            }
            events.extend(
                view.events
                    .iter()
                    .filter(|e| e.concerns(item_scope, &scope_id, name))
                    .map(|e| self.public_event(e)),
            );
        }
        versions.sort_by(|a, b| {
            (&a.name, &a.scope)
                .cmp(&(&b.name, &b.scope))
                .then(a.created_at.total_cmp(&b.created_at))
                .then_with(|| a.manifest_id.cmp(&b.manifest_id))
        });
        events.sort_by(|a, b| (a.created_at_ns, &a.event_id).cmp(&(b.created_at_ns, &b.event_id)));
        VersionsReport { versions, events }
    }

    fn public_version(&self, m: &Manifest) -> VersionEntry {
        // A global tool is usable across projects, but where it came from is not another
        // project's business; the immutable record keeps it for the host's audit.
        let same_project = m.source_project_id.as_deref() == Some(self.project_id.as_str());
        VersionEntry {
            name: m.name.clone(),
            description: m.description.clone(),
            input_schema: m.input_schema.clone(),
            output_schema: m.output_schema.clone(),
            imports: m.imports.clone(),
            scope: m.scope,
            scope_id: m.scope_id.clone(),
            source_manifest_id: m.source_manifest_id.clone(),
            source_project_id: m.source_project_id.clone().filter(|_| same_project),
            source_root_frame_id: m.source_root_frame_id.clone().filter(|_| same_project),
            created_at: m.created_at,
            manifest_id: m.manifest_id.clone(),
            active: false,
            effective: false,
        }
    }

    fn public_event(&self, e: &Event) -> PublicEvent {
        let same_project = e.actor_project_id == self.project_id;
        PublicEvent {
            event_id: e.event_id.clone(),
            operation: e.operation,
            created_at_ns: e.created_at_ns,
            scope: e.scope,
            scope_id: e.scope_id.clone(),
            name: e.name.clone(),
            manifest_id: e.manifest_id.clone(),
            previous_manifest_id: e.previous_manifest_id.clone(),
            actor_root_frame_id: Some(e.actor_root_frame_id.clone()).filter(|_| same_project),
            actor_project_id: Some(e.actor_project_id.clone()).filter(|_| same_project),
        }
    }
}
