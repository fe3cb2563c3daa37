//! Compiled modules kept on disk between processes, so that a one-shot `zkpipe wtns
//! calculate` or `fullprove` (and a daemon's restart) does not compile the same circuit
//! again: Cranelift takes ~0.5 s of a 2-core machine for a 2 MB circom module, ten times
//! the witness itself (lab/experiments/016-witness-synthesis.md).
//!
//! wasmtime has such a cache (its `cache` feature), but it pulls in a zstd build and a
//! config-file format we do not need; `Module::serialize` / `deserialize_file` is the same
//! mechanism without them.
//!
//! The directory is `$ZKPIPE_WASM_CACHE`, else `$XDG_CACHE_HOME/zkpipe/wasm`, else
//! `~/.cache/zkpipe/wasm`, made private to the user (0700). `ZKPIPE_WASM_CACHE=off` turns it
//! off. A file is named by the SHA-256 of the module's bytes and of the engine's
//! compatibility hash (wasmtime version, target, settings), written to a temporary file and
//! renamed into place, so readers see whole files only. Any failure to read or write the
//! cache falls back to compiling: the cache can make compilation faster, never fail it.

use sha2::{Digest, Sha256};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::{Engine, Module};

/// The environment variable naming the cache directory, or `off`.
pub const CACHE_ENV: &str = "ZKPIPE_WASM_CACHE";

/// The cache directory, if caching is on and a home for it is known.
fn dir() -> Option<PathBuf> {
    zkpipe_formats::cache_dir::user_cache_dir(CACHE_ENV, "wasm")
}

/// `bytes` compiled for `engine`: from the cache when it holds them, else compiled (and
/// then stored, best effort).
pub fn module(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Module> {
    let Some(dir) = dir() else {
        return Module::new(engine, bytes);
    };
    let file = dir.join(format!("{}.cwasm", key(engine, bytes)));
    if file.is_file() {
        // SAFETY: wasmtime runs a deserialized module's machine code as it is, so the file
        // must be one `Module::serialize` wrote. It is: files are only created below, in a
        // directory private to this user, under a name that is the hash of the module and of
        // this engine's configuration; and wasmtime itself refuses an artifact from another
        // version, target or configuration. (wasmtime's own cache trusts its directory the
        // same way.)
        if let Ok(m) = unsafe { Module::deserialize_file(engine, &file) } {
            return Ok(m);
        }
    }
    let m = Module::new(engine, bytes)?;
    if let Ok(compiled) = m.serialize() {
        let _ = store(&dir, &file, &compiled);
    }
    Ok(m)
}

fn key(engine: &Engine, bytes: &[u8]) -> String {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    let digest = Sha256::new()
        .chain_update(bytes)
        .chain_update(h.finish().to_le_bytes())
        .finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `compiled` to `file` through a temporary file in the same directory, renamed
/// into place (an existing file with the same name holds the same bytes).
fn store(dir: &Path, file: &Path, compiled: &[u8]) -> std::io::Result<()> {
    zkpipe_formats::cache_dir::create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(compiled)?;
    tmp.as_file().sync_all()?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}
