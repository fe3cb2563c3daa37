//! Generates the gRPC code from proto/zkpipe.proto with a vendored protoc, so that a fresh
//! machine needs nothing installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/zkpipe.proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    if std::env::var_os("PROTOC").is_none() {
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    // The public types, client and server (`pb`): bytes fields are Vec<u8>.
    tonic_build::configure().compile_protos(&["proto/zkpipe.proto"], &["proto"])?;
    // What the daemon serves (`wire`): the same messages, but witnesses decode as `Bytes`
    // slices of tonic's receive buffer instead of being copied into one Vec each.
    let wire = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("wire");
    std::fs::create_dir_all(&wire)?;
    tonic_build::configure()
        .build_client(false)
        .bytes([".zkpipe.v1.SubmitProofRequest.witnesses"])
        .out_dir(wire)
        .compile_protos(&["proto/zkpipe.proto"], &["proto"])?;
    Ok(())
}
