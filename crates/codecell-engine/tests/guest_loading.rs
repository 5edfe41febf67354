//! Loading a guest that is missing or broken is an `EngineError` that says what to do, never a
//! panic, for both guests and both paths (plain compile, and pre-initialisation for RustPython).

use codecell_engine::{BUILD_COMMAND, Engine, EngineError, GuestKind};

#[test]
fn a_missing_guest_names_the_build_command() {
    let dir = tempfile::tempdir().unwrap();
    for guest in [GuestKind::CPython, GuestKind::RustPython] {
        let err = Engine::builder()
            .guest(guest)
            .wasm_path(dir.path().join("absent.wasm"))
            .build()
            .unwrap_err();
        assert!(matches!(err, EngineError::GuestNotBuilt { .. }), "{err}");
        assert!(err.to_string().contains(BUILD_COMMAND), "{err}");
    }
}

#[test]
fn a_broken_guest_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for (name, bytes) in [
        ("garbage.wasm", b"\0asm not really".to_vec()),
        // A valid component with no `wizer-initialize` export and none of the world's exports.
        ("empty.wasm", b"\0asm\x0d\0\x01\0".to_vec()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let plain = Engine::builder()
            .guest(GuestKind::CPython)
            .wasm_path(&path)
            .cache_dir(&cache)
            .build()
            .unwrap_err();
        assert!(
            matches!(
                plain,
                EngineError::Compile { .. } | EngineError::Wasmtime(_)
            ),
            "{name}: {plain}"
        );
        let preinit = Engine::builder()
            .guest(GuestKind::RustPython)
            .wasm_path(&path)
            .cache_dir(&cache)
            .build()
            .unwrap_err();
        assert!(
            matches!(preinit, EngineError::Preinit { .. }),
            "{name}: {preinit}"
        );
    }
    // A failed pre-initialisation caches nothing (the empty component's plain compile may be).
    let preinit_cached = std::fs::read_dir(&cache)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rustpython-"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(preinit_cached, 0);
}
