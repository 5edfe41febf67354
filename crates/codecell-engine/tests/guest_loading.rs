//! Loading a guest that is missing or broken is an `EngineError` that says what to do, never a
//! panic, for both guests and both paths (a plain compile, and pre-initialisation for a guest that
//! exports `wizer-initialize`);
//! precompiling for another OS writes what that OS will look for, or says why it cannot.

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

/// Bytes that are not a guest fail to build an engine with an error, on either guest: garbage,
/// and a valid component with no `wizer-initialize` export (so it is compiled as it is) and none
/// of the world's exports.
#[test]
fn a_broken_guest_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for (name, bytes) in [
        ("garbage.wasm", b"\0asm not really".to_vec()),
        ("empty.wasm", b"\0asm\x0d\0\x01\0".to_vec()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        for guest in codecell_engine::ALL_GUESTS {
            let err = Engine::builder()
                .guest(guest)
                .wasm_path(&path)
                .cache_dir(&cache)
                .build()
                .unwrap_err();
            assert!(
                matches!(err, EngineError::Compile { .. } | EngineError::Wasmtime(_)),
                "{name} as {guest:?}: {err}"
            );
        }
    }
}

/// `precompile_for` writes the artifact another OS's engine will look for, named for that OS,
/// and does not compile it again once it is there; it refuses another architecture or an
/// unknown OS, saying which, and a missing guest as `build` does.
#[test]
fn precompiling_for_another_os_writes_its_artifact_once() {
    let arch = std::env::consts::ARCH;
    let (other_os, other) = if cfg!(windows) {
        ("linux", format!("{arch}-unknown-linux-gnu"))
    } else {
        ("windows", format!("{arch}-pc-windows-gnu"))
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("empty.wasm");
    std::fs::write(&wasm, b"\0asm\x0d\0\x01\0").unwrap();
    let builder = Engine::builder()
        .guest(GuestKind::CPython)
        .wasm_path(&wasm)
        .cache_dir(dir.path().join("cache"));
    let artifact = builder.clone().precompile_for(&other).unwrap();
    let name = artifact.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("cpython-{arch}-{other_os}-")) && name.ends_with(".cwasm"),
        "{name}"
    );
    let written = std::fs::metadata(&artifact).unwrap().modified().unwrap();
    assert_eq!(builder.clone().precompile_for(&other).unwrap(), artifact);
    let again = std::fs::metadata(&artifact).unwrap().modified().unwrap();
    assert_eq!(
        written, again,
        "an artifact in the cache is not compiled again"
    );

    let foreign_arch = if arch == "x86_64" {
        "aarch64"
    } else {
        "x86_64"
    };
    for refused in [
        format!("{foreign_arch}-unknown-linux-gnu"),
        format!("{arch}-unknown-none"),
    ] {
        let err = builder.clone().precompile_for(&refused).unwrap_err();
        assert!(
            matches!(err, EngineError::UnsupportedTarget { .. }),
            "{refused}: {err}"
        );
        assert!(err.to_string().contains(&refused), "{err}");
    }
    let missing = Engine::builder()
        .wasm_path(dir.path().join("absent.wasm"))
        .precompile_for(&other)
        .unwrap_err();
    assert!(
        matches!(missing, EngineError::GuestNotBuilt { .. }),
        "{missing}"
    );
}
