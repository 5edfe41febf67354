//! The bridge to `codecell-policy`: source validation returning the sorted import roots.

pub use codecell_policy::Violation;

/// Validates tool source with the seed's rules; the sorted import roots on success.
pub fn validate(source: &str) -> Result<Vec<String>, Violation> {
    codecell_policy::validate_dynamic_source(source).map(|v| v.imports)
}
