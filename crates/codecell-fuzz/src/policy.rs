//! The dynamic-tool policy validator on arbitrary source.

use codecell_policy::{Options, Strictness, validate_with};

/// Validates `data` under both rule sets; panics if a verdict changes on a second run or when
/// a newline is appended (a source's meaning does not depend on its final newline).
pub fn check(data: &[u8]) {
    let Some(source) = crate::text(data) else {
        return;
    };
    for strictness in [Strictness::Seed, Strictness::Strict] {
        let options = Options { strictness };
        let first = validate_with(source, &options);
        let again = validate_with(source, &options);
        assert_eq!(first, again, "the verdict changed on a second run");
        if let Ok(accepted) = &first
            && !source.ends_with('\\')
            && source.len() < codecell_policy::MAX_SOURCE_CHARS
        {
            let reparsed = validate_with(&format!("{source}\n"), &options);
            assert_eq!(
                reparsed.as_ref().ok(),
                Some(accepted),
                "accepted source refused (or its imports changed) with a newline appended: {reparsed:?}"
            );
        }
    }
    // Strict is the seed's rules plus more: whatever it accepts, the seed accepts.
    if let Ok(strict) = validate_with(
        source,
        &Options {
            strictness: Strictness::Strict,
        },
    ) {
        assert_eq!(validate_with(source, &Options::default()), Ok(strict));
    }
}
