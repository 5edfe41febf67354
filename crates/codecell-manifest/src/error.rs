//! The error of every registry operation.

use crate::runner::RunError;
use crate::schema::SchemaError;
use crate::smoke::SmokeError;
use crate::store::StoreError;
use crate::ttl::TtlError;
use codecell_policy::Violation;

/// Why a registry operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum DynamicToolError {
    /// The registry was opened without a root session id.
    #[error("dynamic tools require a root session id")]
    MissingSessionId,
    /// The spec is not a JSON object.
    #[error("dynamic tool spec must be a JSON object")]
    SpecNotObject,
    /// A spec field that must be a string is a container.
    #[error("dynamic tool {0} must be a string")]
    NotAString(&'static str),
    /// The name does not match `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
    #[error(
        "dynamic tool name is not provider-portable: {0:?} (use 1-64 of A-Z a-z 0-9 _ -, not starting with a digit or -)"
    )]
    InvalidName(String),
    /// The name is one of the reserved names.
    #[error("dynamic tool name is reserved: {0}")]
    ReservedName(String),
    /// This session already has a tool of that name.
    #[error("session dynamic tool already exists: {0:?}")]
    AlreadyDefined(String),
    /// The description is empty after collapsing whitespace.
    #[error("dynamic tool description is required")]
    MissingDescription,
    /// The source broke the policy.
    #[error("dynamic tool source rejected: {0}")]
    Source(#[from] Violation),
    /// A schema is not an object or does not compile.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The spec asks for permissions.
    #[error("session dynamic tools cannot request Host/filesystem/network permissions")]
    Permissions,
    /// The TTL is not a number in (0, 86400].
    #[error(transparent)]
    Ttl(#[from] TtlError),
    /// No smoke arguments were given and none could be synthesised.
    #[error("dynamic tool smoke_args: {0}")]
    SmokeSynthesis(#[from] SmokeError),
    /// The smoke arguments do not match the input schema.
    #[error("dynamic tool smoke_args: {0}")]
    SmokeArgs(String),
    /// The smoke run failed.
    #[error("dynamic tool smoke test failed: {0}")]
    SmokeRun(RunError),
    /// The smoke result does not match the output schema.
    #[error("dynamic tool smoke output: {0}")]
    SmokeOutput(String),
    /// Invocation arguments do not match the input schema.
    #[error("dynamic tool arguments: {0}")]
    Arguments(String),
    /// The result does not match the output schema.
    #[error("dynamic tool output: {0}")]
    Output(String),
    /// The run failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// No tool of that name resolves (or it expired).
    #[error("unknown or expired dynamic tool {0:?}")]
    Unknown(String),
    /// Promotion of a name this session has not defined.
    #[error("no session dynamic tool to promote: {0:?}")]
    NoSessionTool(String),
    /// A scope other than project or global where one of those is required.
    #[error("dynamic tool scope must be project or global, not {0}")]
    InvalidScope(String),
    /// Approval was not given.
    #[error("dynamic tool {0} requires human approval")]
    ApprovalRequired(&'static str),
    /// The manifest id is not a valid version of that name in that scope.
    #[error("manifest {manifest_id:?} is not a {scope} version of {name:?} in this scope")]
    NotAVersion {
        /// Requested id.
        manifest_id: String,
        /// Scope searched.
        scope: String,
        /// Tool name.
        name: String,
    },
    /// Rollback with nothing earlier to return to.
    #[error(
        "cannot roll back {scope} dynamic tool {name:?}: no earlier activated version is available"
    )]
    NoRollbackTarget {
        /// Scope.
        scope: String,
        /// Tool name.
        name: String,
    },
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DynamicToolError {
    /// A stable name for the error, for scripts and other front ends: the `kind` that
    /// `codecell tool --json` prints for a refusal.
    pub fn code(&self) -> &'static str {
        use DynamicToolError as E;
        match self {
            E::MissingSessionId => "missing_session_id",
            E::SpecNotObject | E::NotAString(_) => "invalid_spec",
            E::InvalidName(_) => "invalid_name",
            E::ReservedName(_) => "reserved_name",
            E::AlreadyDefined(_) => "already_defined",
            E::MissingDescription => "missing_description",
            E::Source(_) => "source_rejected",
            E::Schema(e) => e.code(),
            E::Permissions => "permissions",
            E::Ttl(e) => e.code(),
            E::SmokeSynthesis(e) => e.code(),
            E::SmokeArgs(_) => "invalid_smoke_args",
            E::SmokeRun(_) => "smoke_failed",
            E::SmokeOutput(_) => "smoke_output_invalid",
            E::Arguments(_) => "invalid_arguments",
            E::Output(_) => "invalid_output",
            E::Run(run) => run.code(),
            E::Unknown(_) => "unknown_tool",
            E::NoSessionTool(_) => "no_session_tool",
            E::InvalidScope(_) => "invalid_scope",
            E::ApprovalRequired(_) => "approval_required",
            E::NotAVersion { .. } => "not_a_version",
            E::NoRollbackTarget { .. } => "no_rollback_target",
            E::Store(e) => e.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_kinds_the_cli_prints() {
        let cases: Vec<(DynamicToolError, &str)> = vec![
            (DynamicToolError::MissingSessionId, "missing_session_id"),
            (DynamicToolError::NotAString("name"), "invalid_spec"),
            (
                DynamicToolError::AlreadyDefined("t".into()),
                "already_defined",
            ),
            (
                SchemaError::NotAnObject("input_schema".into()).into(),
                "invalid_schema",
            ),
            (TtlError::OutOfRange.into(), "invalid_ttl"),
            (SmokeError("x".into()).into(), "invalid_smoke_args"),
            (
                DynamicToolError::SmokeArgs("x".into()),
                "invalid_smoke_args",
            ),
            (
                DynamicToolError::SmokeRun(RunError::Host("x".into())),
                "smoke_failed",
            ),
            (
                RunError::Limit {
                    kind: "fuel",
                    message: "m".into(),
                }
                .into(),
                "limit",
            ),
            (RunError::InvalidOutput("x".into()).into(), "invalid_output"),
            (RunError::Host("x".into()).into(), "host_failure"),
            (
                RunError::Raised {
                    kind: "ValueError".into(),
                    message: String::new(),
                }
                .into(),
                "tool_raised",
            ),
            (
                DynamicToolError::ApprovalRequired("promotion"),
                "approval_required",
            ),
            (
                StoreError::new("lock the store", "busy").into(),
                "store_failure",
            ),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code, "{error}");
        }
    }
}
