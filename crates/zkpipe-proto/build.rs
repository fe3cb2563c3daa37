//! Generates the gRPC code from proto/zkpipe.proto with a vendored protoc, so that a fresh
//! machine needs nothing installed.

use std::path::PathBuf;

/// The protocol's one source.
const PROTO: &str = "proto/zkpipe.proto";
/// The messages that carry witnesses: the server side decodes them into its own types.
const WITNESS_MESSAGES: [&str; 3] = ["SubmitProofRequest", "ProveRequest", "SubmitProofChunk"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO}");
    println!("cargo:rerun-if-env-changed=PROTOC");
    if std::env::var_os("PROTOC").is_none() {
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    // The public types and the client (`pb`): bytes fields are Vec<u8>.
    tonic_build::configure()
        .build_server(false)
        .compile_protos(&[PROTO], &["proto"])?;
    // The server side (`server`): witnesses decode as `Bytes` slices of tonic's receive
    // buffer instead of being copied into one Vec each. Every other message is `pb`'s, so
    // that both sides share one type per message.
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("server");
    std::fs::create_dir_all(&out)?;
    let mut server = tonic_build::configure()
        .build_client(false)
        .bytes([
            ".zkpipe.v1.SubmitProofRequest.witnesses",
            ".zkpipe.v1.SubmitProofChunk.data",
        ])
        .out_dir(out);
    for name in top_level_types(&std::fs::read_to_string(PROTO)?) {
        if !WITNESS_MESSAGES.contains(&name) {
            server = server.extern_path(format!(".zkpipe.v1.{name}"), format!("crate::pb::{name}"));
        }
    }
    server.compile_protos(&[PROTO], &["proto"])?;
    Ok(())
}

/// The names of the messages and enums declared at the top level of a .proto file.
fn top_level_types(proto: &str) -> Vec<&str> {
    proto
        .lines()
        .filter_map(|l| {
            l.strip_prefix("message ")
                .or_else(|| l.strip_prefix("enum "))
        })
        .filter_map(|rest| rest.split(|c: char| c.is_whitespace() || c == '{').next())
        .filter(|name| !name.is_empty())
        .collect()
}
