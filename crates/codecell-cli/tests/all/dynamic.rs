//! `codecell tool` end to end, as a process: define → invoke → promote (refused, then approved)
//! → activate → rollback → versions, each asserting the JSON; ids checked against the seed's
//! algorithm run by python3.

use crate::common::codecell;

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const PROJECT: &str = "proj-1";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    repo()
        .join("fixtures/dynamic")
        .join(format!("{name}.json"))
        .to_string_lossy()
        .into_owned()
}

/// Runs `codecell tool <args> --store DIR --session S --project P --json`.
fn tool(store: &Path, session: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let store = store.to_string_lossy();
    let mut full = vec!["tool"];
    full.extend_from_slice(args);
    full.extend_from_slice(&[
        "--store",
        &store,
        "--session",
        session,
        "--project",
        PROJECT,
        "--json",
    ]);
    let out = codecell(&full, "");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{full:?}: stdout is not one JSON object ({e}): {}\nstderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code(), value, stderr)
}

fn ok(store: &Path, session: &str, args: &[&str]) -> Value {
    let (code, value, stderr) = tool(store, session, args);
    assert_eq!(code, Some(0), "{args:?}: {value}\n{stderr}");
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(value["load_errors"], json!([]), "{value}");
    value
}

fn refused(store: &Path, session: &str, args: &[&str], code: i32, kind: &str) -> Value {
    let (got, value, stderr) = tool(store, session, args);
    assert_eq!(got, Some(code), "{args:?}: {value}\n{stderr}");
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["error"]["kind"], kind, "{value}");
    let message = value["error"]["message"].as_str().unwrap();
    assert!(
        stderr.contains(message),
        "the reason is on stderr too: {stderr}"
    );
    value
}

/// Ids the seed's algorithm gives (`codecell-manifest/tests/fixtures/seed_ids.py`).
fn seed_ids(spec: &Value, session: &str) -> Value {
    let script = repo().join("crates/codecell-manifest/tests/fixtures/seed_ids.py");
    let cases = json!([{"spec": spec, "session_id": session, "project_id": PROJECT}]);
    let mut child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("this test needs python3 on PATH to compute the seed's ids: {e}")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cases.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{} failed", script.display());
    let ids: Value = serde_json::from_slice(&out.stdout).expect("ids JSON");
    ids[0].clone()
}

fn spec_of(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
fn define_prints_the_seeds_manifest_id_for_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["word_frequency", "date_difference", "stats_summary"] {
        let path = fixture(name);
        let v = ok(dir.path(), "root-1", &["define", &path]);
        let want = seed_ids(&spec_of(&path), "root-1");
        assert_eq!(v["manifest"]["manifest_id"], want["session"], "{name}");
        assert_eq!(v["manifest"]["name"], name);
        assert_eq!(v["manifest"]["scope"], "session");
        assert_eq!(v["manifest"]["version"], 1);
        assert_eq!(v["manifest"]["session_id"], "root-1");
    }
    let list = ok(dir.path(), "root-1", &["list"]);
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["date_difference", "stats_summary", "word_frequency"]
    );
    // Defining the same name twice in a session is refused.
    refused(
        dir.path(),
        "root-1",
        &["define", &fixture("word_frequency")],
        1,
        "already_defined",
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
fn define_invoke_promote_activate_rollback_versions() {
    let dir = tempfile::tempdir().unwrap();
    let store = &dir.path().join("store");
    let v1_path = fixture("word_frequency");
    let v1_spec = spec_of(&v1_path);
    let v1_ids = seed_ids(&v1_spec, "root-1");

    // define → invoke (session scope)
    let defined = ok(store, "root-1", &["define", &v1_path]);
    assert_eq!(defined["manifest"]["manifest_id"], v1_ids["session"]);
    let invoked = ok(
        store,
        "root-1",
        &[
            "invoke",
            "word_frequency",
            "--args",
            r#"{"text": "b a b", "top": 1}"#,
        ],
    );
    assert_eq!(invoked["scope"], "session");
    assert_eq!(invoked["manifest_id"], v1_ids["session"]);
    assert_eq!(
        invoked["result"],
        json!({"total_words": 3, "unique_words": 2, "top": [{"word": "b", "count": 2}]})
    );
    // Both schemas are the manifest's: bad arguments are refused.
    refused(
        store,
        "root-1",
        &["invoke", "word_frequency", "--args", r#"{"top": 1}"#],
        1,
        "invalid_arguments",
    );

    // promote: refused without --approve, saying why; then approved.
    let no = refused(
        store,
        "root-1",
        &["promote", "word_frequency", "--scope", "project"],
        1,
        "approval_required",
    );
    assert!(
        no["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--approve"),
        "{no}"
    );
    let v1 = ok(
        store,
        "root-1",
        &[
            "promote",
            "word_frequency",
            "--scope",
            "project",
            "--approve",
        ],
    );
    let v1_id = v1["manifest"]["manifest_id"].as_str().unwrap().to_string();
    assert_eq!(v1_id, v1_ids["project"]);
    assert_eq!(v1["manifest"]["version"], 2);
    assert_eq!(v1["manifest"]["scope_id"], PROJECT);
    assert_eq!(v1["manifest"]["source_manifest_id"], v1_ids["session"]);
    assert_eq!(v1["event"]["operation"], "promote");
    assert_eq!(v1["event"]["manifest_id"], v1_id.as_str());

    // A second session of the project defines and promotes another version.
    let mut v2_spec = v1_spec.clone();
    v2_spec["description"] = json!("Word counts, second revision.");
    let v2_path = dir.path().join("word_frequency_v2.json");
    std::fs::write(&v2_path, v2_spec.to_string()).unwrap();
    let v2_path = v2_path.to_string_lossy().into_owned();
    ok(store, "root-2", &["define", &v2_path]);
    let v2 = ok(
        store,
        "root-2",
        &[
            "promote",
            "word_frequency",
            "--scope",
            "project",
            "--approve",
        ],
    );
    let v2_id = v2["manifest"]["manifest_id"].as_str().unwrap().to_string();
    assert_eq!(v2_id, seed_ids(&v2_spec, "root-2")["project"]);
    assert_ne!(v1_id, v2_id);

    // activate v1: refused without --approve, then granted.
    let activate = [
        "activate",
        "word_frequency",
        "--scope",
        "project",
        "--manifest",
    ];
    let mut args = activate.to_vec();
    args.push(&v1_id);
    refused(store, "root-3", &args, 1, "approval_required");
    args.push("--approve");
    let activated = ok(store, "root-3", &args);
    assert_eq!(activated["manifest"]["manifest_id"], v1_id.as_str());
    assert_eq!(activated["event"]["operation"], "activate");
    // A third session of the project resolves the active project version.
    let listed = ok(store, "root-3", &["list"]);
    assert_eq!(listed["tools"][0]["scope"], "project");
    assert_eq!(listed["tools"][0]["manifest_id"], v1_id.as_str());
    let invoked = ok(
        store,
        "root-3",
        &["invoke", "word_frequency", "--args", r#"{"text": "x"}"#],
    );
    assert_eq!(invoked["manifest_id"], v1_id.as_str());

    // rollback: refused without --approve; then back to v2 (active before v1's activation).
    refused(
        store,
        "root-3",
        &["rollback", "word_frequency", "--scope", "project"],
        1,
        "approval_required",
    );
    let rolled = ok(
        store,
        "root-3",
        &[
            "rollback",
            "word_frequency",
            "--scope",
            "project",
            "--approve",
        ],
    );
    assert_eq!(rolled["manifest"]["manifest_id"], v2_id.as_str());
    assert_eq!(rolled["event"]["operation"], "rollback");
    assert_eq!(rolled["event"]["previous_manifest_id"], v1_id.as_str());
    // Nothing in global scope to roll back to.
    refused(
        store,
        "root-3",
        &[
            "rollback",
            "word_frequency",
            "--scope",
            "global",
            "--approve",
        ],
        1,
        "no_rollback_target",
    );

    // versions: both project versions, v2 active and effective, and the four events in order.
    let versions = ok(store, "root-3", &["versions", "word_frequency"]);
    let entries = versions["versions"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{versions}");
    let flags = |id: &str| {
        let e = entries.iter().find(|e| e["manifest_id"] == id).unwrap();
        (
            e["active"].clone(),
            e["effective"].clone(),
            e["scope"].clone(),
        )
    };
    assert_eq!(flags(&v2_id), (json!(true), json!(true), json!("project")));
    assert_eq!(
        flags(&v1_id),
        (json!(false), json!(false), json!("project"))
    );
    let ops: Vec<(&str, &str)> = versions["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["operation"].as_str().unwrap(),
                e["manifest_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("promote", v1_id.as_str()),
            ("promote", v2_id.as_str()),
            ("activate", v1_id.as_str()),
            ("rollback", v2_id.as_str())
        ]
    );
    // The session that defined v1 still resolves its own session version first.
    let own = ok(
        store,
        "root-1",
        &["invoke", "word_frequency", "--args", r#"{"text": "x"}"#],
    );
    assert_eq!(own["manifest_id"], v1_ids["session"]);
}

#[test]
fn bad_input_exits_2_and_refusals_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let store = &dir.path().join("store");
    let missing = dir
        .path()
        .join("missing.json")
        .to_string_lossy()
        .into_owned();
    refused(store, "root-1", &["define", &missing], 2, "bad_input");
    let not_json = dir.path().join("bad.json");
    std::fs::write(&not_json, "{\"name\": ").unwrap();
    refused(
        store,
        "root-1",
        &["define", &not_json.to_string_lossy()],
        2,
        "bad_input",
    );
    refused(
        store,
        "root-1",
        &["invoke", "word_frequency", "--args", "{nope"],
        2,
        "bad_input",
    );
    refused(
        store,
        "root-1",
        &["invoke", "word_frequency", "--args", "{}"],
        1,
        "unknown_tool",
    );
    // A source the policy refuses: exit 1 with the rule in the message.
    let mut spec = spec_of(&fixture("word_frequency"));
    spec["implementation"] = json!("import os\ndef execute(args):\n    return {}\n");
    let path = dir.path().join("os.json");
    std::fs::write(&path, spec.to_string()).unwrap();
    let v = refused(
        store,
        "root-1",
        &["define", &path.to_string_lossy()],
        1,
        "source_rejected",
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("os"),
        "{v}"
    );
    // Without --json the refusal is text on stderr, with the same exit code.
    let out = codecell(
        &[
            "tool",
            "promote",
            "nothing",
            "--scope",
            "global",
            "--store",
            &store.to_string_lossy(),
            "--session",
            "root-1",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // Promotion needs a session tool before it asks for approval, as in the seed.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no session dynamic tool to promote"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_resolves_dynamic_handlers_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = &dir.path().join("store");
    ok(store, "root-1", &["define", &fixture("date_difference")]);
    let catalog = json!({"categories": [{"name": "dates", "description": "Date tools.", "tools": [{
        "name": "date_difference",
        "description": "Days between two dates.",
        "inputSchema": {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}, "required": ["start", "end"]},
        "handler": {"dynamic": "date_difference"}
    }]}]});
    let catalog_path = dir.path().join("catalog.json");
    std::fs::write(&catalog_path, catalog.to_string()).unwrap();
    let catalog_path = catalog_path.to_string_lossy().into_owned();
    let store_arg = store.to_string_lossy().into_owned();
    let snippet = "r = call_tool('dates', 'date_difference', start='2024-01-01', end='2024-12-25')\nprint(r['days'], r['end_weekday'])\n";
    let out = codecell(
        &[
            "run",
            "-",
            "--tools",
            &catalog_path,
            "--store",
            &store_arg,
            "--session",
            "root-1",
            "--json",
        ],
        snippet,
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("run --json");
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["stdout"], "359 Wednesday\n");
    // Without the store the same catalog is bad input.
    let out = codecell(&["run", "-", "--tools", &catalog_path], snippet);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dynamic"));
}

/// `--store-key-file`: what one key signed, another key's holder sees as inert and reported,
/// and a key file that cannot be used is bad input.
#[test]
fn a_store_key_signs_and_a_different_key_makes_the_tool_inert() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (key, other) = (dir.path().join("key"), dir.path().join("other"));
    std::fs::write(&key, [b'k'; 32]).unwrap();
    std::fs::write(&other, [b'o'; 32]).unwrap();
    let key_arg = key.to_string_lossy().into_owned();
    let other_arg = other.to_string_lossy().into_owned();
    let spec = fixture("word_frequency");
    ok(
        &store,
        "s1",
        &["define", &spec, "--store-key-file", &key_arg],
    );
    let listed = ok(&store, "s1", &["list", "--store-key-file", &key_arg]);
    assert_eq!(listed["tools"].as_array().unwrap().len(), 1, "{listed}");
    let (code, foreign, _) = tool(&store, "s1", &["list", "--store-key-file", &other_arg]);
    assert_eq!(code, Some(0));
    assert_eq!(foreign["tools"], json!([]), "{foreign}");
    assert!(
        !foreign["load_errors"].as_array().unwrap().is_empty(),
        "{foreign}"
    );
    let missing = dir.path().join("absent").to_string_lossy().into_owned();
    let (code, refusal, _) = tool(&store, "s1", &["list", "--store-key-file", &missing]);
    assert_eq!(code, Some(2), "{refusal}");
}
