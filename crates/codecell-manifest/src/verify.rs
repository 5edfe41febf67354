//! Load-time verification of records read from disk, check for check as the seed's
//! `_load_session_manifests` and `_scoped_manifest_from_record`. A failure is a message for
//! `load_errors`; the record stays inert.

use crate::manifest::{
    Manifest, RESERVED_NAMES, SCOPED_EXPIRES_AT, Scope, SessionCore, collapse_whitespace,
    is_manifest_id, is_valid_name,
};
use crate::{pyvalue, schema, ttl};
use serde_json::Value;

/// Fields both record versions share, re-derived and re-validated.
struct Common {
    name: String,
    description: String,
    implementation: String,
    imports: Vec<String>,
    input_schema: Value,
    output_schema: Value,
    ttl_s: f64,
    created_at: f64,
    expires_at: f64,
}

fn string_field(record: &Value, key: &str) -> Result<String, String> {
    pyvalue::str_or_empty(record.get(key)).ok_or_else(|| format!("{key} is not a string"))
}

/// Checks source, imports, permissions, identity, schemas, TTL and timestamps.
fn common(record: &Value, scoped: bool) -> Result<Common, String> {
    let implementation = string_field(record, "implementation")?;
    let imports = codecell_policy::validate_dynamic_source(&implementation)
        .map(|v| v.imports)
        .map_err(|e| format!("dynamic tool source rejected: {e}"))?;
    let recorded: Option<Vec<&str>> = match record.get("imports") {
        Some(Value::Array(items)) => items.iter().map(Value::as_str).collect(),
        Some(v) if pyvalue::truthy(v) => None,
        _ => Some(Vec::new()),
    };
    if recorded != Some(imports.iter().map(String::as_str).collect()) {
        return Err("validated import set mismatch".into());
    }
    if record.get("permissions").is_some_and(pyvalue::truthy) {
        return Err(if scoped {
            "dynamic scoped manifest requests permissions"
        } else {
            "session manifest requests permissions"
        }
        .into());
    }
    let prefix = if scoped {
        "scoped manifest"
    } else {
        "manifest"
    };
    let name = string_field(record, "name")?;
    let description = collapse_whitespace(&string_field(record, "description")?);
    if !is_valid_name(&name) || description.is_empty() {
        return Err(format!("{prefix} identity is invalid"));
    }
    if RESERVED_NAMES.contains(&name.as_str()) {
        return Err(format!("{prefix} identity is reserved"));
    }
    let input_schema =
        schema::normalize(record.get("input_schema"), "input_schema").map_err(|e| e.to_string())?;
    let output_schema = schema::normalize(record.get("output_schema"), "output_schema")
        .map_err(|e| e.to_string())?;
    let ttl_s = ttl::parse(record.get("ttl_s")).map_err(|e| e.to_string())?;
    let created_at = pyvalue::float(record.get("created_at"))
        .ok_or_else(|| format!("{prefix} created_at is not a number"))?;
    let expires_at = pyvalue::float(record.get("expires_at"))
        .ok_or_else(|| format!("{prefix} expires_at is not a number"))?;
    Ok(Common {
        name,
        description,
        implementation,
        imports,
        input_schema,
        output_schema,
        ttl_s,
        created_at,
        expires_at,
    })
}

/// Verifies a session (v1) record found in `file_stem`.json; `Ok(None)` for a record of another
/// scope, which the seed skips silently.
pub(crate) fn session_record(
    record: &Value,
    file_stem: &str,
    session_id: &str,
) -> Result<Option<Manifest>, String> {
    if !record.is_object() || !pyvalue::equals_int(record.get("version"), 1) {
        return Err("unsupported manifest record".into());
    }
    if record.get("scope") != Some(&Value::from("session")) {
        return Ok(None);
    }
    if record.get("session_id") != Some(&Value::from(session_id)) {
        return Err("session identity mismatch".into());
    }
    let c = common(record, false)?;
    if !c.created_at.is_finite() || !c.expires_at.is_finite() {
        return Err("manifest timestamps are invalid".into());
    }
    if ((c.created_at + c.ttl_s) - c.expires_at).abs() > 1e-6 {
        return Err("manifest expiry does not match its TTL".into());
    }
    let core = SessionCore {
        name: &c.name,
        description: &c.description,
        input_schema: &c.input_schema,
        output_schema: &c.output_schema,
        implementation: &c.implementation,
        imports: &c.imports,
        session_id,
        ttl_s: c.ttl_s,
    };
    let mut manifest = core.into_manifest(c.created_at);
    if record.get("manifest_id") != Some(&Value::from(manifest.manifest_id.as_str()))
        || file_stem != manifest.manifest_id
    {
        return Err("manifest content hash mismatch".into());
    }
    // Keep the recorded expiry (within 1e-6 of created + ttl) exactly as the seed does.
    manifest.expires_at = c.expires_at;
    Ok(Some(manifest))
}

/// Verifies a project/global (v2) record found in `file_stem`.json.
pub(crate) fn scoped_record(record: &Value, file_stem: &str) -> Result<Manifest, String> {
    if !record.is_object() {
        return Err("scoped manifest record is not an object".into());
    }
    if pyvalue::int_or_zero(record.get("version")) != Some(2) {
        return Err("unsupported scoped dynamic manifest version".into());
    }
    let scope = string_field(record, "scope")?;
    let scope_id = string_field(record, "scope_id")?;
    let scope = match Scope::parse(&scope) {
        Some(s @ (Scope::Project | Scope::Global)) => s,
        _ => return Err("scoped manifest scope is invalid".into()),
    };
    if scope == Scope::Project && scope_id.is_empty() {
        return Err("project scoped manifest lacks project_id".into());
    }
    if scope == Scope::Global && !scope_id.is_empty() {
        return Err("global scoped manifest has a scope_id".into());
    }
    let source_root = string_field(record, "source_root_frame_id")?;
    let source_project = string_field(record, "source_project_id")?;
    if source_root.is_empty() || source_project.is_empty() {
        return Err("scoped manifest lacks bound source scope".into());
    }
    if scope == Scope::Project && source_project != scope_id {
        return Err("project scoped manifest source/scope mismatch".into());
    }
    let c = common(record, true)?;
    if !c.created_at.is_finite() || !c.expires_at.is_finite() || c.expires_at <= c.created_at {
        return Err("scoped manifest timestamps are invalid".into());
    }
    if c.expires_at != SCOPED_EXPIRES_AT {
        return Err("scoped manifest expiry is invalid".into());
    }
    let source_manifest_id = string_field(record, "source_manifest_id")?;
    if !is_manifest_id(&source_manifest_id) {
        return Err("scoped manifest source id is invalid".into());
    }
    let source_session = string_field(record, "session_id")?;
    if source_session != source_root {
        return Err("scoped manifest root identity mismatch".into());
    }
    let source = Manifest {
        name: c.name,
        description: c.description,
        input_schema: c.input_schema,
        output_schema: c.output_schema,
        implementation: c.implementation,
        imports: c.imports,
        permissions: Vec::new(),
        scope: Scope::Session,
        session_id: source_session,
        ttl_s: c.ttl_s,
        created_at: c.created_at,
        expires_at: c.expires_at,
        manifest_id: source_manifest_id,
        record_version: 1,
        scope_id: None,
        source_manifest_id: None,
        source_project_id: None,
        source_root_frame_id: None,
    };
    let manifest = crate::manifest::promoted(
        &source,
        scope,
        &scope_id,
        &source_project,
        &source_root,
        c.created_at,
    );
    if record.get("manifest_id") != Some(&Value::from(manifest.manifest_id.as_str())) {
        return Err("scoped manifest content hash mismatch".into());
    }
    if file_stem != manifest.manifest_id {
        return Err("scoped manifest file name does not match its content hash".into());
    }
    Ok(manifest)
}
