//! Project/global versions: reading them back, and promote / activate / rollback, each of which
//! appends an event under the store's inter-process lock.

use super::Registry;
use crate::error::DynamicToolError;
use crate::event_log::{self, Event, Operation};
use crate::manifest::{self, Manifest, Scope};
use std::collections::{HashMap, HashSet};

/// Everything on disk for project/global scopes, read once per query.
pub(super) struct ScopedView {
    pub(super) manifests: Vec<Manifest>,
    pub(super) events: Vec<Event>,
}

impl Registry {
    pub(super) fn scoped_view(&self) -> ScopedView {
        let (manifests, manifest_errors) = self.store.scoped_manifests();
        let (events, event_errors) = self.store.events();
        self.state()
            .record_errors(manifest_errors.into_iter().chain(event_errors));
        ScopedView { manifests, events }
    }

    /// "" for global, the project id for project; an error for session.
    pub(super) fn scope_id(&self, scope: Scope) -> Result<String, DynamicToolError> {
        match scope {
            Scope::Project => Ok(self.project_id.clone()),
            Scope::Global => Ok(String::new()),
            Scope::Session => Err(DynamicToolError::InvalidScope(scope.to_string())),
        }
    }

    /// Valid versions in one scope (optionally of one name), oldest first.
    pub(super) fn versions_in<'v>(
        view: &'v ScopedView,
        scope: Scope,
        scope_id: &str,
        name: Option<&str>,
    ) -> Vec<&'v Manifest> {
        let mut found: Vec<&Manifest> = view
            .manifests
            .iter()
            .filter(|m| m.scope == scope && m.scope_id.as_deref() == Some(scope_id))
            .filter(|m| name.is_none_or(|n| m.name == n))
            .collect();
        found.sort_by(|a, b| {
            a.created_at
                .total_cmp(&b.created_at)
                .then_with(|| a.manifest_id.cmp(&b.manifest_id))
        });
        found
    }

    /// name → active manifest id in one scope, from the replay of its events.
    pub(super) fn active_ids(
        &self,
        view: &ScopedView,
        scope: Scope,
        scope_id: &str,
        versions: &[&Manifest],
    ) -> HashMap<String, String> {
        let by_id: HashMap<&str, &Manifest> = versions
            .iter()
            .map(|m| (m.manifest_id.as_str(), *m))
            .collect();
        let names: HashSet<&str> = versions.iter().map(|m| m.name.as_str()).collect();
        let mut active = HashMap::new();
        let mut errors = Vec::new();
        for name in names {
            let (history, replay_errors) = event_log::replay(&view.events, scope, scope_id, name);
            errors.extend(replay_errors);
            let Some(id) = history.last() else { continue };
            match by_id.get(id.as_str()) {
                Some(m) if m.name == name => {
                    active.insert(name.to_string(), id.clone());
                }
                _ => errors.push(format!(
                    "activation for {scope}:{name} references unavailable manifest {id}"
                )),
            }
        }
        self.state().record_errors(errors);
        active
    }

    /// The active manifests of this registry's project (or of global).
    /// The active version of `name` in one scope, if any.
    pub(super) fn active_version(
        &self,
        view: &ScopedView,
        scope: Scope,
        name: &str,
    ) -> Option<Manifest> {
        let scope_id = self.scope_id(scope).ok()?;
        let versions = Self::versions_in(view, scope, &scope_id, Some(name));
        let active = self.active_ids(view, scope, &scope_id, &versions);
        versions
            .into_iter()
            .find(|m| active.get(&m.name) == Some(&m.manifest_id))
            .cloned()
    }

    pub(super) fn active_versions(&self, view: &ScopedView, scope: Scope) -> Vec<Manifest> {
        let Ok(scope_id) = self.scope_id(scope) else {
            return Vec::new();
        };
        let versions = Self::versions_in(view, scope, &scope_id, None);
        let active = self.active_ids(view, scope, &scope_id, &versions);
        versions
            .into_iter()
            .filter(|m| active.get(&m.name) == Some(&m.manifest_id))
            .cloned()
            .collect()
    }

    fn event(
        &self,
        operation: Operation,
        scope: Scope,
        scope_id: &str,
        name: &str,
        id: &str,
    ) -> Event {
        Event {
            event_id: crate::store::fsutil::unique_token(),
            operation,
            created_at_ns: u64::try_from(self.clock.now_ns()).unwrap_or(u64::MAX),
            scope,
            scope_id: scope_id.to_string(),
            name: name.to_string(),
            manifest_id: id.to_string(),
            previous_manifest_id: None,
            actor_root_frame_id: self.session_id.clone(),
            actor_project_id: self.project_id.clone(),
        }
    }

    fn find_version(
        &self,
        name: &str,
        scope: Scope,
        scope_id: &str,
        manifest_id: &str,
    ) -> Result<Manifest, DynamicToolError> {
        let view = self.scoped_view();
        Self::versions_in(&view, scope, scope_id, Some(name))
            .into_iter()
            .find(|m| m.manifest_id == manifest_id)
            .cloned()
            .ok_or_else(|| DynamicToolError::NotAVersion {
                manifest_id: manifest_id.to_string(),
                scope: scope.to_string(),
                name: name.to_string(),
            })
    }

    /// Promotes this session's tool to project or global scope and activates it there.
    /// Needs `approved` or a yes from the approval callback. Promoting the same content again
    /// reuses the existing version (its original `created_at` wins).
    pub fn promote(
        &self,
        name: &str,
        scope: Scope,
        approved: bool,
    ) -> Result<Manifest, DynamicToolError> {
        if scope == Scope::Session {
            return Err(DynamicToolError::InvalidScope(scope.to_string()));
        }
        let source = self
            .session_manifest(name)
            .ok_or_else(|| DynamicToolError::NoSessionTool(name.to_string()))?;
        let operation = format!("promote:{scope}");
        if !approved
            && !self
                .approval
                .as_ref()
                .is_some_and(|ask| ask(&source, &operation))
        {
            return Err(DynamicToolError::ApprovalRequired("promotion"));
        }
        let scope_id = self.scope_id(scope)?;
        let candidate = manifest::promoted(
            &source,
            scope,
            &scope_id,
            &self.project_id,
            &self.session_id,
            self.clock.now(),
        );
        let lock = self.store.lock()?;
        lock.write_scoped_manifest(&candidate)?;
        let promoted = self.find_version(name, scope, &scope_id, &candidate.manifest_id)?;
        let event = self.event(
            Operation::Promote,
            scope,
            &scope_id,
            name,
            &promoted.manifest_id,
        );
        lock.append_event(&event)?;
        drop(lock);
        self.state().last_audit_event = Some(event);
        Ok(promoted)
    }

    /// Activates an existing version in a scope; needs `approved`.
    pub fn activate(
        &self,
        name: &str,
        scope: Scope,
        manifest_id: &str,
        approved: bool,
    ) -> Result<Manifest, DynamicToolError> {
        if !approved {
            return Err(DynamicToolError::ApprovalRequired("activation"));
        }
        let scope_id = self.scope_id(scope)?;
        let lock = self.store.lock()?;
        let manifest = self.find_version(name, scope, &scope_id, manifest_id)?;
        let event = self.event(
            Operation::Activate,
            scope,
            &scope_id,
            name,
            &manifest.manifest_id,
        );
        lock.append_event(&event)?;
        drop(lock);
        self.state().last_audit_event = Some(event);
        Ok(manifest)
    }

    /// Re-activates the version that was active before the current one; needs `approved`.
    /// Fails with [`DynamicToolError::NoRollbackTarget`] when there is none.
    pub fn rollback(
        &self,
        name: &str,
        scope: Scope,
        approved: bool,
    ) -> Result<Manifest, DynamicToolError> {
        if !approved {
            return Err(DynamicToolError::ApprovalRequired("rollback"));
        }
        let scope_id = self.scope_id(scope)?;
        // The history is read under the lock so two rollbacks cannot pick the same target.
        let lock = self.store.lock()?;
        let view = self.scoped_view();
        let versions = Self::versions_in(&view, scope, &scope_id, Some(name));
        let available: HashSet<String> = versions.iter().map(|m| m.manifest_id.clone()).collect();
        let (history, errors) = event_log::replay(&view.events, scope, &scope_id, name);
        self.state().record_errors(errors);
        let no_target = || DynamicToolError::NoRollbackTarget {
            scope: scope.to_string(),
            name: name.to_string(),
        };
        let target_id = event_log::rollback_target(&history, &available).ok_or_else(no_target)?;
        let target = versions
            .into_iter()
            .find(|m| m.manifest_id == target_id)
            .cloned()
            .ok_or_else(no_target)?;
        let mut event = self.event(Operation::Rollback, scope, &scope_id, name, &target_id);
        event.previous_manifest_id = history.last().cloned();
        lock.append_event(&event)?;
        drop(lock);
        self.state().last_audit_event = Some(event);
        Ok(target)
    }
}
