//! Optional authentication of store files with a key only the host holds: with a store key,
//! every manifest and every event line carries an HMAC-SHA256 and anything unsigned or
//! mis-signed is inert and reported, so whoever can write the store directory cannot forge a
//! scoped version and activate it. Without a key nothing is signed or checked, and files and ids
//! are exactly the reference's.
//!
//! A manifest's MAC covers its canonical record (without the `hmac` field); an event's covers
//! its canonical line and its line number, so a signed line copied elsewhere (to replay an old
//! activation) does not verify. What a key cannot prevent: deleting the store, or cutting the
//! log back to an earlier line (which restores an earlier, once-approved state).

use crate::canonical;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::path::Path;

/// Field holding the hex MAC in a signed manifest record or event line.
pub const MAC_FIELD: &str = "hmac";
/// Shortest store key accepted, in bytes (a key an attacker could guess protects nothing).
pub const MIN_STORE_KEY_BYTES: usize = 16;
/// Longest store key file read, in bytes.
pub const MAX_STORE_KEY_BYTES: u64 = 4096;

/// HMAC-SHA256 (RFC 2104) of the concatenation of `parts`.
pub(crate) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Compares in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a MAC is over: the kind of file, then the canonical JSON without the MAC field.
fn mac(key: &[u8], domain: &str, canonical_text: &str) -> String {
    hex::encode(hmac_sha256(
        key,
        &[
            b"codecell-store-v1\0",
            domain.as_bytes(),
            b"\0",
            canonical_text.as_bytes(),
        ],
    ))
}

/// Adds the MAC field to a JSON object (which must not already have one).
pub(crate) fn sign(key: &[u8], domain: &str, mut value: Value) -> Value {
    let text = canonical::to_string(&value);
    if let Value::Object(map) = &mut value {
        map.insert(MAC_FIELD.into(), Value::from(mac(key, domain, &text)));
    }
    value
}

/// Removes and checks the MAC field of a record read from disk.
pub(crate) fn verify(key: &[u8], domain: &str, value: &mut Value) -> Result<(), String> {
    let Value::Object(map) = value else {
        return Err("is not signed with the store key (not an object)".into());
    };
    let given = match map.remove(MAC_FIELD) {
        Some(Value::String(given)) => given,
        Some(_) => return Err("has a malformed store signature".into()),
        None => return Err("is not signed with the store key; ignored".into()),
    };
    let expected = mac(key, domain, &canonical::to_string(value));
    if same(given.as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err("has a store signature that does not match (forged, altered or moved); ignored".into())
    }
}

/// The domain of a manifest's MAC.
pub(crate) const MANIFEST_DOMAIN: &str = "manifest";

/// The domain of the event on line `number` of the log.
pub(crate) fn event_domain(number: usize) -> String {
    format!("event\0{number}")
}

/// Reads a store key from a file: its bytes, with trailing ASCII whitespace (a final newline)
/// removed. The file must be a regular file of at most [`MAX_STORE_KEY_BYTES`], and the key at
/// least [`MIN_STORE_KEY_BYTES`] long.
pub fn read_store_key(path: &Path) -> Result<Vec<u8>, crate::store::StoreError> {
    let context = format!("read store key file {}", path.display());
    let fail = |message: String| crate::store::StoreError::new(context.clone(), message);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| fail("not a file name".into()))?;
    let dir = cap_std::fs::Dir::open_ambient_dir(parent, cap_std::ambient_authority())
        .map_err(|e| fail(e.to_string()))?;
    let mut key = crate::store::fsutil::read_bounded(&dir, name, MAX_STORE_KEY_BYTES)
        .map_err(|e| fail(e.to_string()))?
        .ok_or_else(|| fail(format!("larger than {MAX_STORE_KEY_BYTES} bytes")))?;
    while key.last().is_some_and(u8::is_ascii_whitespace) {
        key.pop();
    }
    if key.len() < MIN_STORE_KEY_BYTES {
        return Err(fail(format!(
            "the key is {} bytes; at least {MIN_STORE_KEY_BYTES} are required",
            key.len()
        )));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 and test case 6 (a key longer than the block).
        assert_eq!(
            hex::encode(hmac_sha256(
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_signature_verifies_once_and_only_for_its_content_and_domain() {
        let key = b"0123456789abcdef";
        let signed = sign(key, "manifest", serde_json::json!({"a": 1}));
        let mut good = signed.clone();
        assert_eq!(verify(key, "manifest", &mut good), Ok(()));
        assert_eq!(good, serde_json::json!({"a": 1}));
        let mut other_domain = signed.clone();
        assert!(verify(key, "event\u{0}1", &mut other_domain).is_err());
        let mut altered = signed.clone();
        altered["a"] = serde_json::json!(2);
        assert!(verify(key, "manifest", &mut altered).is_err());
        let mut wrong_key = signed;
        assert!(verify(b"fedcba9876543210", "manifest", &mut wrong_key).is_err());
        let mut unsigned = serde_json::json!({"a": 1});
        assert!(
            verify(key, "manifest", &mut unsigned)
                .unwrap_err()
                .contains("not signed")
        );
    }
}
