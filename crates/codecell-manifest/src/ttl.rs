//! The seed's `_ttl`: `float(value)`, finite, within (0, 86400].

use crate::manifest::MAX_TTL_S;
use serde_json::Value;

/// A TTL that is not a number or out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TtlError {
    /// `float(value)` would raise.
    #[error("dynamic tool ttl_s must be a number")]
    NotANumber,
    /// Not finite, not positive, or over a day.
    #[error("dynamic tool ttl_s must be within (0, 86400]")]
    OutOfRange,
}

impl TtlError {
    /// The stable error code the CLI prints for a bad TTL.
    pub fn code(&self) -> &'static str {
        "invalid_ttl"
    }
}

/// Parses a TTL as the seed does (numbers, booleans and numeric strings are accepted).
pub fn parse(value: Option<&Value>) -> Result<f64, TtlError> {
    let ttl = crate::pyvalue::float(value).ok_or(TtlError::NotANumber)?;
    if !ttl.is_finite() || ttl <= 0.0 || ttl > MAX_TTL_S {
        return Err(TtlError::OutOfRange);
    }
    Ok(ttl)
}
