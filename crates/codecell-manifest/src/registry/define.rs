//! `define`: validate a spec the seed's way, smoke-test it, store the session manifest.

use super::Registry;
use crate::error::DynamicToolError;
use crate::manifest::{
    DEFAULT_TTL_S, Manifest, RESERVED_NAMES, SessionCore, collapse_whitespace, is_valid_name,
};
use crate::{pyvalue, schema, smoke, ttl};
use serde_json::Value;

fn string_field(spec: &Value, key: &'static str) -> Result<String, DynamicToolError> {
    pyvalue::str_or_empty(spec.get(key)).ok_or(DynamicToolError::NotAString(key))
}

impl Registry {
    /// Defines a session tool from a spec (`name`, `description`, `input_schema`,
    /// `output_schema`, `implementation`, optional `smoke_args`, `ttl_s`, `permissions`):
    /// checks are the seed's, in the seed's order; the smoke run must succeed and match the
    /// output schema before anything is written.
    pub async fn define(&self, spec: &Value) -> Result<Manifest, DynamicToolError> {
        if !spec.is_object() {
            return Err(DynamicToolError::SpecNotObject);
        }
        let name = string_field(spec, "name")?;
        if !is_valid_name(&name) {
            return Err(DynamicToolError::InvalidName(name));
        }
        if RESERVED_NAMES.contains(&name.as_str()) {
            return Err(DynamicToolError::ReservedName(name));
        }
        if self.session_manifest(&name).is_some() {
            return Err(DynamicToolError::AlreadyDefined(name));
        }
        let description = collapse_whitespace(&string_field(spec, "description")?);
        if description.is_empty() {
            return Err(DynamicToolError::MissingDescription);
        }
        let implementation = string_field(spec, "implementation")?;
        let imports = codecell_policy::validate_dynamic_source(&implementation)?.imports;
        let (input_schema, input) =
            schema::normalize_compiled(spec.get("input_schema"), "input_schema")?;
        let (output_schema, output) =
            schema::normalize_compiled(spec.get("output_schema"), "output_schema")?;
        if spec.get("permissions").is_some_and(pyvalue::truthy) {
            return Err(DynamicToolError::Permissions);
        }
        let ttl_s = match spec.get("ttl_s") {
            None => DEFAULT_TTL_S,
            given => ttl::parse(given)?,
        };
        let manifest = SessionCore {
            name: &name,
            description: &description,
            input_schema: &input_schema,
            output_schema: &output_schema,
            implementation: &implementation,
            imports: &imports,
            session_id: &self.session_id,
            ttl_s,
        }
        .into_manifest(self.clock.now());

        let smoke_args = match spec.get("smoke_args") {
            None | Some(Value::Null) => smoke::minimal_smoke_args(&input_schema)?,
            Some(given) => given.clone(),
        };
        if let Some(error) = input.validation_error(&smoke_args) {
            return Err(DynamicToolError::SmokeArgs(error));
        }
        let result = self
            .runner
            .run(&manifest, &smoke_args)
            .await
            .map_err(DynamicToolError::SmokeRun)?;
        if let Some(error) = output.validation_error(&result) {
            return Err(DynamicToolError::SmokeOutput(error));
        }
        // Compiled once: the first invoke reuses them.
        let compiled = super::Validators {
            input_schema: input_schema.clone(),
            output_schema: output_schema.clone(),
            input: Ok(input),
            output: Ok(output),
        };

        // Uniqueness is checked and the file written under the store's lock, against what is
        // on disk: another process (or another registry) of this session may have defined the
        // name while the smoke test ran, and without the lock four concurrent defines of one
        // name all succeeded.
        let lock = self.store.lock()?;
        let known: std::collections::HashSet<String> = self
            .state()
            .session
            .values()
            .map(|m| m.manifest_id.clone())
            .collect();
        let (on_disk, errors) = self
            .store
            .load_session_manifests_except(&self.session_id, &|stem| known.contains(stem));
        let now = self.clock.now();
        let mut state = self.state();
        state.record_errors(errors);
        if let Some(theirs) = on_disk
            .into_iter()
            .find(|m| m.name == name && now < m.expires_at)
        {
            // Theirs is this session's tool now: resolve it here too.
            state.session.entry(name.clone()).or_insert(theirs);
            return Err(DynamicToolError::AlreadyDefined(name));
        }
        if state.session.contains_key(&name) {
            return Err(DynamicToolError::AlreadyDefined(name));
        }
        self.store.write_session_manifest(&manifest)?;
        state.session.insert(name, manifest.clone());
        drop(state);
        drop(lock);
        self.cache_validators(&manifest.manifest_id, std::sync::Arc::new(compiled));
        Ok(manifest)
    }
}
