//! Build script: the guest's Python half (py/) is frozen into the binary by `py_freeze!`, which
//! cargo cannot see, so changes there must rerun the build; and the shadow stack is enlarged.

fn main() {
    println!("cargo:rerun-if-changed=py");
    println!("cargo:rerun-if-changed=../common");
    println!("cargo:rerun-if-changed=../wit");
    // RustPython recurses on the wasm shadow stack (in linear memory) for every Python call; the
    // 1 MiB default overflows well before the engine's default recursion limit. See README.md.
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=-zstack-size={}", STACK_SIZE);
    }
}

/// Bytes of linear memory reserved for the shadow stack.
const STACK_SIZE: u32 = 8 << 20;
