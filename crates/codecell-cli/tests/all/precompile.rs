//! `codecell precompile`: a target it cannot compile for is refused with the reason, before any
//! compiling. (Compiling for Windows, and Windows then loading what it wrote, is what
//! `ci/windows/cli-smoke` checks under Wine.)

use crate::common::codecell;

#[test]
fn another_architecture_is_refused_with_its_reason() {
    let foreign = if std::env::consts::ARCH == "x86_64" {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    };
    for target in [foreign, "wasm32-unknown-unknown"] {
        let out = codecell(&["precompile", "--target", target], "");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains(&format!("cannot precompile for {target}")),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "nothing was compiled");
    }
}
