use super::*;

#[test]
fn fnv_matches_circom_runtime() {
    // node: fnvHash("a") = "af63dc4c8601ec8c", fnvHash("main.in[0]") from circom_runtime.
    assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
}

#[test]
fn log_buffering_follows_circom_runtime_version_test() {
    let v = |major, minor, patch| Version {
        major,
        minor,
        patch,
    };
    assert!(v(2, 2, 3).buffers_log_values());
    assert!(v(2, 0, 7).buffers_log_values());
    assert!(!v(2, 0, 6).buffers_log_values());
    assert!(!v(1, 5, 9).buffers_log_values());
}

#[test]
fn rejects_what_is_not_a_circom_module() {
    let p = Path::new("x.wasm");
    let e = WasmCircuit::compile(p, b"\0asm\x01\0\0\0").err().unwrap();
    assert!(
        e.to_string()
            .contains("x.wasm: unsupported circom version 1"),
        "{e}"
    );
    let e = WasmCircuit::compile(p, b"\0asm\x01\0\0\0\x05")
        .err()
        .unwrap();
    assert!(e.to_string().contains("not a valid wasm module"), "{e}");
}
