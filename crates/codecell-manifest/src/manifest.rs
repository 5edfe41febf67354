//! Manifest records exactly as the seed writes them (v1 session, v2 project/global) and their
//! content-addressed ids: `dyn-` + sha256 of the canonical JSON of the record's core.

use crate::canonical;
use serde_json::{Value, json};
use std::fmt;

/// Largest implementation accepted, in characters: the policy's own limit, re-exported.
pub use codecell_policy::MAX_SOURCE_CHARS;
/// Largest canonical JSON invocation payload (source + arguments) a runner should accept.
pub const MAX_INPUT_CHARS: usize = 200_000;
/// Largest canonical JSON result a runner should accept.
pub const MAX_OUTPUT_CHARS: usize = 1_000_000;
/// TTL of a session tool when the spec gives none, in seconds.
pub const DEFAULT_TTL_S: f64 = 3600.0;
/// Longest allowed TTL, in seconds.
pub const MAX_TTL_S: f64 = 86_400.0;
/// `expires_at` of every project/global manifest (9999-12-31T23:59:59Z).
pub const SCOPED_EXPIRES_AT: f64 = 253_402_300_799.0;
/// Names no dynamic tool may take.
pub const RESERVED_NAMES: [&str; 3] = ["bash", "submit_output", "finalize_response"];

/// Where a manifest lives and resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// One root session; expires with its TTL.
    Session,
    /// One project; promoted and activated with approval.
    Project,
    /// Every project; promoted and activated with approval.
    Global,
}

impl Scope {
    /// The seed's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Project => "project",
            Scope::Global => "global",
        }
    }
    /// Parses the seed's spelling.
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "session" => Some(Scope::Session),
            "project" => Some(Scope::Project),
            "global" => Some(Scope::Global),
            _ => None,
        }
    }
}

/// Compares with the seed's spelling, so code that compared the old `String` fields still works.
impl PartialEq<str> for Scope {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// Compares with the seed's spelling.
impl PartialEq<&str> for Scope {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Serialised as the seed's spelling (`"session"`, `"project"`, `"global"`), exactly as the
/// `String` fields it replaced.
impl serde::Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Scope::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid scope {text:?}")))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One immutable version of a dynamic tool (the seed's `DynamicToolManifest`).
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Tool name.
    pub name: String,
    /// Description, whitespace collapsed.
    pub description: String,
    /// Normalised input schema.
    pub input_schema: Value,
    /// Normalised output schema.
    pub output_schema: Value,
    /// Python source defining `execute(args)`.
    pub implementation: String,
    /// Sorted import roots of the source.
    pub imports: Vec<String>,
    /// Always empty: dynamic tools get no host permissions.
    pub permissions: Vec<String>,
    /// Scope of this version.
    pub scope: Scope,
    /// The defining root session (for scoped versions: the source session).
    pub session_id: String,
    /// Time to live of the session version, in seconds.
    pub ttl_s: f64,
    /// Creation time, seconds since the epoch.
    pub created_at: f64,
    /// Expiry time, seconds since the epoch.
    pub expires_at: f64,
    /// `dyn-` + sha256 of the canonical core.
    pub manifest_id: String,
    /// 1 for session records, 2 for project/global records.
    pub record_version: u8,
    /// Project id (project scope) or "" (global); `None` for session records.
    pub scope_id: Option<String>,
    /// Id of the session manifest this version was promoted from.
    pub source_manifest_id: Option<String>,
    /// Project of the promoting session.
    pub source_project_id: Option<String>,
    /// Root frame (session) that promoted it.
    pub source_root_frame_id: Option<String>,
}

impl Manifest {
    /// Whether the manifest has expired at time `now`.
    pub fn expired_at(&self, now: f64) -> bool {
        now >= self.expires_at
    }

    /// The record written to disk, field for field as the seed's `record()`.
    pub fn record(&self) -> Value {
        let mut record = json!({
            "version": self.record_version,
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "implementation": self.implementation,
            "imports": self.imports,
            "permissions": self.permissions,
            "scope": self.scope.as_str(),
            "session_id": self.session_id,
            "ttl_s": self.ttl_s,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "manifest_id": self.manifest_id,
        });
        if self.record_version >= 2
            && let Value::Object(map) = &mut record
        {
            map.insert("scope_id".into(), json!(self.scope_id));
            map.insert("source_manifest_id".into(), json!(self.source_manifest_id));
            map.insert("source_project_id".into(), json!(self.source_project_id));
            map.insert(
                "source_root_frame_id".into(),
                json!(self.source_root_frame_id),
            );
        }
        record
    }

    /// The canonical JSON of [`Manifest::record`].
    pub fn record_json(&self) -> String {
        canonical::to_string(&self.record())
    }
}

/// The parts of a session manifest that its id covers.
#[derive(Debug, Clone)]
pub struct SessionCore<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Collapsed description.
    pub description: &'a str,
    /// Normalised input schema.
    pub input_schema: &'a Value,
    /// Normalised output schema.
    pub output_schema: &'a Value,
    /// Source.
    pub implementation: &'a str,
    /// Sorted import roots.
    pub imports: &'a [String],
    /// Session id.
    pub session_id: &'a str,
    /// TTL in seconds.
    pub ttl_s: f64,
}

impl SessionCore<'_> {
    /// The v1 core as the seed's `define` builds it (no version field, empty permissions).
    pub fn to_value(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "implementation": self.implementation,
            "imports": self.imports,
            "permissions": [],
            "scope": "session",
            "session_id": self.session_id,
            "ttl_s": self.ttl_s,
        })
    }

    /// Builds the session manifest created at `created_at`.
    pub fn into_manifest(self, created_at: f64) -> Manifest {
        Manifest {
            name: self.name.to_string(),
            description: self.description.to_string(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            implementation: self.implementation.to_string(),
            imports: self.imports.to_vec(),
            permissions: Vec::new(),
            scope: Scope::Session,
            session_id: self.session_id.to_string(),
            ttl_s: self.ttl_s,
            created_at,
            expires_at: created_at + self.ttl_s,
            manifest_id: manifest_id(&self.to_value()),
            record_version: 1,
            scope_id: None,
            source_manifest_id: None,
            source_project_id: None,
            source_root_frame_id: None,
        }
    }
}

/// `dyn-` + sha256 of the canonical JSON of a core.
pub fn manifest_id(core: &Value) -> String {
    format!("dyn-{}", canonical::hash(core))
}

/// Whether `text` looks like a manifest id (`dyn-` + 64 lowercase hex digits).
pub fn is_manifest_id(text: &str) -> bool {
    text.strip_prefix("dyn-").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The v2 core of a promotion (the seed's `_scoped_manifest_core`).
pub fn scoped_core(
    source: &Manifest,
    scope: Scope,
    scope_id: &str,
    source_project_id: &str,
    source_root_frame_id: &str,
) -> Value {
    json!({
        "version": 2,
        "name": source.name,
        "description": source.description,
        "input_schema": source.input_schema,
        "output_schema": source.output_schema,
        "implementation": source.implementation,
        "imports": source.imports,
        "permissions": source.permissions,
        "scope": scope.as_str(),
        "scope_id": scope_id,
        "session_id": source_root_frame_id,
        "ttl_s": source.ttl_s,
        "source_manifest_id": source.manifest_id,
        "source_project_id": source_project_id,
        "source_root_frame_id": source_root_frame_id,
    })
}

/// Builds the project/global version promoted from a session manifest at time `now`.
pub fn promoted(
    source: &Manifest,
    scope: Scope,
    scope_id: &str,
    source_project_id: &str,
    source_root_frame_id: &str,
    now: f64,
) -> Manifest {
    let core = scoped_core(
        source,
        scope,
        scope_id,
        source_project_id,
        source_root_frame_id,
    );
    Manifest {
        scope,
        created_at: now,
        expires_at: SCOPED_EXPIRES_AT,
        manifest_id: manifest_id(&core),
        record_version: 2,
        scope_id: Some(scope_id.to_string()),
        source_manifest_id: Some(source.manifest_id.clone()),
        source_project_id: Some(source_project_id.to_string()),
        source_root_frame_id: Some(source_root_frame_id.to_string()),
        ..source.clone()
    }
}

/// Whether `name` matches `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
pub fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

/// Python's `" ".join(text.split())`: str.split() also splits on U+001C..U+001F.
pub fn collapse_whitespace(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
