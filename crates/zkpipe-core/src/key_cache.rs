//! Keys whose points have passed their checks, remembered by the digest of the key file, so
//! that proving again with the same key (a one-shot `zkpipe prove` per proof, a daemon's
//! restart) skips the checks without giving them up: the subgroup checks of a 2^20 key are
//! the largest part of a CPU proof's key load (lab/experiments/019-latency-floor.md).
//!
//! An entry is an empty file named `<sha-256 of the file>.<checks>` in a directory private
//! to the user: `$ZKPIPE_KEY_CACHE` (`off` turns the cache off), else
//! `$XDG_CACHE_HOME/zkpipe/checked-keys`, else `~/.cache/zkpipe/checked-keys`. It is
//! written only after the checks passed, and a key is trusted only if its bytes hash to a
//! recorded digest of at least the checks asked for, so a changed file is checked again.
//! Like the compiled-module cache, the directory is trusted: whoever can write to it could
//! mark a key as checked. Failures to read or write it fall back to checking.

use crate::curve::Curve;
use crate::error::Error;
use crate::key::{CompiledKey, PointChecks};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use zkpipe_formats::cache_dir::{create_private_dir, user_cache_dir};
use zkpipe_formats::zkey::ZkeyFile;

/// The environment variable naming the cache directory, or `off`.
pub const CACHE_ENV: &str = "ZKPIPE_KEY_CACHE";

/// Bytes hashed per task: the digest is SHA-256 over the length and the SHA-256 of each
/// chunk, so a key hashes on every core. 1 MiB chunks keep a 2^16 circuit's ~34 MiB key
/// on all 16 cores of the benchmark host: with 8 MiB ones its five chunks take 6–11 ms
/// there, with 1 MiB 2.6–2.9 (lab/experiments/029-cpu-one-shot-serial-path.md). Changing it changes
/// every digest, so keys remembered before are checked once more.
const CHUNK: usize = 1 << 20;

/// A key file's digest (see [`CHUNK`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDigest([u8; 32]);

impl KeyDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let chunks: Vec<[u8; 32]> = bytes
            .par_chunks(CHUNK)
            .map(|c| Sha256::digest(c).into())
            .collect();
        let mut h = Sha256::new();
        h.update((bytes.len() as u64).to_le_bytes());
        for c in &chunks {
            h.update(c);
        }
        Self(h.finalize().into())
    }

    fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The directory of checked keys.
#[derive(Debug, Clone)]
pub struct CheckedKeys {
    dir: PathBuf,
}

impl CheckedKeys {
    /// The user's cache (see the module doc), unless turned off or no home is known.
    pub fn user() -> Option<Self> {
        user_cache_dir(CACHE_ENV, "checked-keys").map(Self::at)
    }

    /// A cache in `dir` (created when the first entry is written).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, d: &KeyDigest, checks: PointChecks) -> PathBuf {
        self.dir.join(format!("{}.{checks}", d.hex()))
    }

    /// Whether a key with digest `d` passed checks at least as strict as `wanted`
    /// (per-point covers batched).
    pub fn passed(&self, d: &KeyDigest, wanted: PointChecks) -> bool {
        let covering: &[PointChecks] = match wanted {
            PointChecks::Trusted => return true,
            PointChecks::Batched => &[PointChecks::Batched, PointChecks::PerPoint],
            PointChecks::PerPoint => &[PointChecks::PerPoint],
        };
        covering.iter().any(|&c| self.entry(d, c).is_file())
    }

    /// Records that a key with digest `d` passed `checks`.
    pub fn record(&self, d: &KeyDigest, checks: PointChecks) -> std::io::Result<()> {
        if checks == PointChecks::Trusted {
            return Ok(());
        }
        create_private_dir(&self.dir)?;
        // An empty file: creating it is the record (nothing to write half-way).
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.entry(d, checks))
            .map(drop)
    }
}

/// How [`compile_checked`] came by its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOutcome {
    /// The points were checked as asked (and the key recorded, where a cache was given).
    Checked,
    /// The cache held the key's digest: the points' checks were skipped.
    Remembered,
    /// No checks were asked for.
    Trusted,
}

/// [`CompiledKey::compile`] with `checks`, skipping the point checks when `cache`
/// remembers this file passing them, and recording a file that passes.
pub fn compile_checked<E: Curve>(
    zkey: &ZkeyFile,
    checks: PointChecks,
    cache: Option<&CheckedKeys>,
) -> Result<(CompiledKey<E>, CheckOutcome), Error> {
    let Some(cache) = cache.filter(|_| checks != PointChecks::Trusted) else {
        let outcome = if checks == PointChecks::Trusted {
            CheckOutcome::Trusted
        } else {
            CheckOutcome::Checked
        };
        return Ok((CompiledKey::compile(zkey, checks)?, outcome));
    };
    let digest = KeyDigest::of(zkey.bytes());
    if cache.passed(&digest, checks) {
        return Ok((
            CompiledKey::compile(zkey, PointChecks::Trusted)?,
            CheckOutcome::Remembered,
        ));
    }
    let key = CompiledKey::compile(zkey, checks)?;
    if let Err(e) = cache.record(&digest, checks) {
        tracing::warn!(dir = %cache.dir().display(), "could not record a checked key: {e}");
    }
    Ok((key, CheckOutcome::Checked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_depends_on_every_byte_and_the_length() {
        let a = vec![7u8; CHUNK + 5];
        let mut b = a.clone();
        b[CHUNK + 1] ^= 1;
        assert_ne!(KeyDigest::of(&a), KeyDigest::of(&b));
        assert_ne!(KeyDigest::of(&a), KeyDigest::of(&a[..CHUNK]));
        assert_eq!(KeyDigest::of(&a), KeyDigest::of(&a.clone()));
    }

    #[test]
    fn per_point_covers_batched_not_the_reverse() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CheckedKeys::at(dir.path().join("checked"));
        let d = KeyDigest::of(b"a key");
        assert!(!cache.passed(&d, PointChecks::Batched));
        assert!(cache.passed(&d, PointChecks::Trusted));
        cache.record(&d, PointChecks::Batched).unwrap();
        assert!(cache.passed(&d, PointChecks::Batched));
        assert!(!cache.passed(&d, PointChecks::PerPoint));
        cache.record(&d, PointChecks::PerPoint).unwrap();
        assert!(cache.passed(&d, PointChecks::PerPoint));
        assert!(!cache.passed(&KeyDigest::of(b"another key"), PointChecks::Batched));
    }
}
