//! The guests' JSON codecs against serde_json: a value serde_json reads is a tool's result,
//! decoded into Python objects by the guest (RustPython: the native decoder of
//! `wasm-guests/rustpython/src/json.rs`), and sent straight back as another call's argument,
//! encoded by the guest; the host must receive the very value it sent.

use crate::guest_run;
use codecell_catalog::{Catalog, ToolSpec, handler_fn};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The snippet: fetch the value, send it back, say so.
const ROUND_TRIP: &str =
    "r = call_tool('json', 'give')\ncall_tool('json', 'take', v=r)\nprint('sent')\n";

/// A catalog whose `json.give` answers `value` and whose `json.take` stores its arguments in
/// `taken`.
fn catalog(value: Value, taken: Arc<Mutex<Option<Value>>>) -> Catalog {
    let object = json!({"type": "object"});
    Catalog::builder()
        .category("json", "A value out and back.")
        .tool(
            "json",
            ToolSpec::new("give", "Returns the value.", object.clone()),
            handler_fn(move |_| Ok(value.clone())),
        )
        .tool(
            "json",
            ToolSpec::new("take", "Keeps its arguments.", object),
            handler_fn(move |args| {
                *taken.lock().expect("not poisoned") = Some(args);
                Ok(Value::Null)
            }),
        )
        .build()
        .expect("the oracle's catalog is valid")
}

/// Panics unless every guest ([`guest_run::guests`]) returns the JSON value of `data` (when
/// serde_json reads one) unchanged: same types, numbers, strings and key order.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    for &guest in guest_run::guests() {
        let taken = Arc::new(Mutex::new(None));
        let outcome = guest_run::run(guest, ROUND_TRIP, &catalog(value.clone(), taken.clone()));
        assert!(
            outcome.is_ok() && outcome.stdout == "sent\n",
            "{guest:?}: the round trip of {text:?} ended {:?}: {:?}",
            outcome.status(),
            outcome.error()
        );
        let back = taken.lock().expect("not poisoned").take();
        assert_eq!(
            back,
            Some(json!({ "v": value })),
            "{guest:?}: {text:?} came back changed"
        );
    }
}
