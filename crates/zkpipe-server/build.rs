//! Generates the gRPC code from proto/zkpipe.proto with a vendored protoc, so that a fresh
//! machine needs nothing installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/zkpipe.proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    if std::env::var_os("PROTOC").is_none() {
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    tonic_build::configure().compile_protos(&["proto/zkpipe.proto"], &["proto"])?;
    Ok(())
}
