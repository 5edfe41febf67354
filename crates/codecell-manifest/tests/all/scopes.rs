//! Scope resolution, approvals, activation and rollback, versions, TTL with an injected clock.

use crate::common::{PythonRunner, add_spec, add_spec_v2, clock, open};
use codecell_manifest::{DynamicToolError, Operation, Registry, RegistryOptions, Scope};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn runner() -> Arc<PythonRunner> {
    Arc::new(PythonRunner::default())
}

#[tokio::test]
async fn resolution_is_session_then_project_then_global() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let alice = open(dir.path(), "alice", Some("p1"), c.clone(), runner());
    let v1 = alice.define(&add_spec("add")).await.unwrap();
    let global = alice.promote("add", Scope::Global, true).unwrap();

    // Another project sees only the global version.
    let carol = open(dir.path(), "carol", Some("p2"), c.clone(), runner());
    assert_eq!(carol.get("add").unwrap().manifest_id, global.manifest_id);
    assert_eq!(carol.get("add").unwrap().scope, Scope::Global);

    // A project version shadows the global one for that project only.
    let bob = open(dir.path(), "bob", Some("p1"), c.clone(), runner());
    bob.define(&add_spec_v2("add")).await.unwrap();
    let project = bob.promote("add", Scope::Project, true).unwrap();
    let dave = open(dir.path(), "dave", Some("p1"), c.clone(), runner());
    assert_eq!(dave.get("add").unwrap().manifest_id, project.manifest_id);
    assert_eq!(carol.get("add").unwrap().manifest_id, global.manifest_id);

    // A session definition shadows both, for its own session.
    assert_eq!(alice.get("add").unwrap().manifest_id, v1.manifest_id);
    assert_eq!(alice.tools().len(), 1);
    let result = dave.invoke("add", &json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(result, json!({"sum": 3.0}));
    assert!(dave.load_errors().is_empty(), "{:?}", dave.load_errors());
}

#[tokio::test]
async fn approvals_are_refused_and_granted() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(dir.path(), "s1", Some("p"), clock(), runner());
    registry.define(&add_spec("add")).await.unwrap();
    let error = registry.promote("add", Scope::Project, false).unwrap_err();
    assert!(
        matches!(error, DynamicToolError::ApprovalRequired("promotion")),
        "{error}"
    );
    assert!(error.to_string().contains("requires human approval"));
    assert!(
        registry.versions(None, None).versions.is_empty(),
        "nothing was written"
    );

    // A callback can approve; it is asked with the operation name.
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let mut options = RegistryOptions::new("s1", dir.path());
    options.project_id = Some("p".into());
    options.clock = clock();
    options.approval = Some(Arc::new(move |m, op| {
        seen.fetch_add(1, Ordering::SeqCst);
        m.name == "add" && op == "promote:global"
    }));
    let approving = Registry::open(options, runner()).unwrap();
    assert!(
        approving.promote("add", Scope::Project, false).is_err(),
        "callback said no"
    );
    let promoted = approving
        .promote("add", Scope::Global, false)
        .expect("callback said yes");
    assert_eq!(asked.load(Ordering::SeqCst), 2);

    let error = approving
        .activate("add", Scope::Global, &promoted.manifest_id, false)
        .unwrap_err();
    assert!(
        matches!(error, DynamicToolError::ApprovalRequired("activation")),
        "{error}"
    );
    let error = approving.rollback("add", Scope::Global, false).unwrap_err();
    assert!(
        matches!(error, DynamicToolError::ApprovalRequired("rollback")),
        "{error}"
    );
    assert!(
        approving
            .activate("add", Scope::Global, &promoted.manifest_id, true)
            .is_ok()
    );
    let error = registry.promote("add", Scope::Session, true).unwrap_err();
    assert!(
        matches!(error, DynamicToolError::InvalidScope(_)),
        "{error}"
    );
    let error = registry.promote("nope", Scope::Project, true).unwrap_err();
    assert!(
        matches!(error, DynamicToolError::NoSessionTool(_)),
        "{error}"
    );
}

#[tokio::test]
async fn rollback_returns_to_the_previous_version_and_fails_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let first = open(dir.path(), "s1", Some("p"), c.clone(), runner());
    first.define(&add_spec("add")).await.unwrap();
    let v1 = first.promote("add", Scope::Project, true).unwrap();
    let error = first.rollback("add", Scope::Project, true).unwrap_err();
    assert!(
        matches!(error, DynamicToolError::NoRollbackTarget { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("no earlier activated version"));

    c.advance(5.0);
    let second = open(dir.path(), "s2", Some("p"), c.clone(), runner());
    second.define(&add_spec_v2("add")).await.unwrap();
    let v2 = second.promote("add", Scope::Project, true).unwrap();
    assert_ne!(v1.manifest_id, v2.manifest_id);
    let reader = open(dir.path(), "s3", Some("p"), c.clone(), runner());
    assert_eq!(reader.get("add").unwrap().manifest_id, v2.manifest_id);

    let back = second.rollback("add", Scope::Project, true).unwrap();
    assert_eq!(back.manifest_id, v1.manifest_id);
    assert_eq!(reader.get("add").unwrap().manifest_id, v1.manifest_id);
    let event = second.last_audit_event().unwrap();
    assert_eq!(event.operation, Operation::Rollback);
    assert_eq!(
        event.previous_manifest_id.as_deref(),
        Some(v2.manifest_id.as_str())
    );
    assert!(
        second.rollback("add", Scope::Project, true).is_err(),
        "history exhausted"
    );

    // Activation by id, and an id that is not a version of that name is refused.
    second
        .activate("add", Scope::Project, &v2.manifest_id, true)
        .unwrap();
    assert_eq!(reader.get("add").unwrap().manifest_id, v2.manifest_id);
    let error = second
        .activate(
            "add",
            Scope::Project,
            &format!("dyn-{}", "0".repeat(64)),
            true,
        )
        .unwrap_err();
    assert!(
        matches!(error, DynamicToolError::NotAVersion { .. }),
        "{error}"
    );
    let error = second
        .activate("add", Scope::Global, &v2.manifest_id, true)
        .unwrap_err();
    assert!(
        matches!(error, DynamicToolError::NotAVersion { .. }),
        "wrong scope: {error}"
    );

    // Promoting the same content again reuses the version and its created_at.
    c.advance(100.0);
    let again = first.promote("add", Scope::Project, true).unwrap();
    assert_eq!(again.manifest_id, v1.manifest_id);
    assert_eq!(again.created_at, v1.created_at);
    assert_eq!(
        reader.get("add").unwrap().manifest_id,
        v1.manifest_id,
        "re-promotion activates"
    );
    assert_eq!(
        reader
            .versions(Some("add"), Some(Scope::Project))
            .versions
            .len(),
        2
    );
}

#[tokio::test]
async fn versions_flag_active_and_effective_and_hide_other_projects() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let owner = open(dir.path(), "owner", Some("p1"), c.clone(), runner());
    owner.define(&add_spec("add")).await.unwrap();
    let project = owner.promote("add", Scope::Project, true).unwrap();
    c.advance(1.0);
    let global = owner.promote("add", Scope::Global, true).unwrap();

    let mine = open(dir.path(), "mate", Some("p1"), c.clone(), runner()).versions(None, None);
    assert_eq!(mine.versions.len(), 2);
    let p = mine.versions.iter().find(|v| v.scope == "project").unwrap();
    let g = mine.versions.iter().find(|v| v.scope == "global").unwrap();
    assert!(
        p.active && p.effective,
        "project version is active and effective"
    );
    assert!(
        g.active && !g.effective,
        "global is active but shadowed by project"
    );
    assert_eq!(p.manifest_id, project.manifest_id);
    assert_eq!(g.source_project_id.as_deref(), Some("p1"));
    assert_eq!(g.source_root_frame_id.as_deref(), Some("owner"));
    assert_eq!(mine.events.len(), 2);
    assert_eq!(mine.events[0].actor_root_frame_id.as_deref(), Some("owner"));

    let other = open(dir.path(), "stranger", Some("p2"), c.clone(), runner()).versions(None, None);
    assert_eq!(
        other.versions.len(),
        1,
        "another project's project scope is invisible"
    );
    let g = &other.versions[0];
    assert_eq!(g.manifest_id, global.manifest_id);
    assert!(g.active && g.effective);
    assert_eq!(g.source_project_id, None);
    assert_eq!(g.source_root_frame_id, None);
    assert_eq!(
        g.source_manifest_id, global.source_manifest_id,
        "source manifest id stays"
    );
    assert_eq!(other.events.len(), 1);
    assert_eq!(other.events[0].actor_project_id, None);
    assert_eq!(other.events[0].actor_root_frame_id, None);
    let json = serde_json::to_value(&other).unwrap();
    assert_eq!(json["versions"][0]["source_project_id"], json!(null));
}

#[tokio::test]
async fn session_tools_expire_with_the_injected_clock() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let registry = open(dir.path(), "s", None, c.clone(), runner());
    let mut spec = add_spec("short");
    spec["ttl_s"] = json!(60);
    registry.define(&spec).await.unwrap();
    registry.define(&add_spec("long")).await.unwrap();
    c.advance(59.5);
    assert!(registry.get("short").is_some());
    assert_eq!(registry.purge_expired(), 0);
    c.advance(0.5);
    assert_eq!(
        registry.purge_expired(),
        1,
        "expires exactly at created + ttl"
    );
    assert!(registry.get("short").is_none());
    let error = registry
        .invoke("short", &json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(matches!(error, DynamicToolError::Unknown(_)), "{error}");
    assert!(registry.get("long").is_some());
    // The expired name is free again.
    registry.define(&spec).await.unwrap();

    // Reopening after expiry loads nothing expired and reports no error for it.
    c.advance(3600.0);
    let reopened = open(dir.path(), "s", None, c.clone(), runner());
    assert!(reopened.tools().is_empty());
    assert!(
        reopened.load_errors().is_empty(),
        "{:?}",
        reopened.load_errors()
    );
    c.set(1_712_345_678.25 + 10.0);
    let early = open(dir.path(), "s", None, c.clone(), runner());
    assert_eq!(early.tools().len(), 2, "before expiry the files load again");
}

/// `get(name)` resolves one name without building the whole effective map; it must agree with
/// `tools()` (which does) for every name, across session, project and global versions.
#[tokio::test]
async fn get_agrees_with_tools_for_every_name() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let alice = open(dir.path(), "alice", Some("p1"), c.clone(), runner());
    for name in ["g_only", "p_over_g", "s_over_all"] {
        alice.define(&add_spec(name)).await.unwrap();
        alice.promote(name, Scope::Global, true).unwrap();
    }
    let bob = open(dir.path(), "bob", Some("p1"), c.clone(), runner());
    for name in ["p_over_g", "s_over_all", "p_only"] {
        bob.define(&add_spec_v2(name)).await.unwrap();
        bob.promote(name, Scope::Project, true).unwrap();
    }
    let carol = open(dir.path(), "carol", Some("p1"), c.clone(), runner());
    carol.define(&add_spec("s_over_all")).await.unwrap();
    carol.define(&add_spec("s_only")).await.unwrap();

    for registry in [&alice, &bob, &carol] {
        let tools = registry.tools();
        for manifest in &tools {
            let got = registry
                .get(&manifest.name)
                .expect("a listed tool resolves");
            assert_eq!(got.manifest_id, manifest.manifest_id, "{}", manifest.name);
            assert_eq!(got.scope, manifest.scope, "{}", manifest.name);
        }
        assert!(registry.get("absent").is_none());
    }
    let scope_of = |name: &str| carol.get(name).unwrap().scope;
    assert_eq!(scope_of("g_only"), Scope::Global);
    assert_eq!(scope_of("p_over_g"), Scope::Project);
    assert_eq!(scope_of("p_only"), Scope::Project);
    assert_eq!(scope_of("s_over_all"), Scope::Session);
    assert_eq!(scope_of("s_only"), Scope::Session);
}
