//! What a key's header says and what the key costs in memory, read before it is loaded.

use crate::curves::curve;
use std::path::{Path, PathBuf};
use zkpipe_core::device::{BindOptions, KeyShape};
use zkpipe_formats::zkey::ZkeyFile;

/// What the header of a key says, and what it costs in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMeta {
    /// The key id (file stem).
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// Curve and sizes.
    pub shape: KeyShape,
    /// How it binds to a device (its options, or the engine's defaults).
    pub bind: BindOptions,
    /// Host bytes of the compiled key when resident (points and matrices).
    pub host_bytes: u64,
    /// Host bytes one partition of this key needs in flight (buffers and scratch, and what
    /// the device itself holds on the host during its pass).
    pub partition_bytes: u64,
    /// Host bytes a partition submitted with circuit inputs needs on top: the `.wtns` its
    /// generator writes and the generator's copy of the signals.
    pub synthesis_bytes: u64,
}

impl KeyMeta {
    /// From a mapped key; `device_host_bytes` is what the device holds on the host per
    /// partition ([`zkpipe_core::Devices::partition_host_bytes`]), `bind` how it binds.
    pub(crate) fn from_zkey(
        id: &str,
        path: &Path,
        z: &ZkeyFile,
        device_host_bytes: u64,
        bind: BindOptions,
    ) -> Self {
        let shape = KeyShape::of_zkey(z);
        let (n_vars, n_public, n) = (shape.n_vars, shape.n_public, shape.domain_size);
        let (g1, g2) = curve(shape.curve).point_bytes();
        let fr = 32usize;
        let g1_points = 2 * n_vars + n_vars.saturating_sub(n_public + 1) + n + n_public + 1;
        let csr = shape.n_coefficients * (4 + fr) + 2 * (n + 1) * 4;
        let host_bytes = (g1_points * g1 + n_vars * g2 + csr + 4096) as u64;
        // a, b, c and h over the domain; the witness and its scalars; MSM scratch.
        let partition_bytes = (fr * (5 * n + 2 * n_vars) + (1 << 20)) as u64 + device_host_bytes;
        let synthesis_bytes = (2 * fr * n_vars) as u64;
        Self {
            id: id.to_string(),
            path: path.to_path_buf(),
            shape,
            bind,
            host_bytes,
            partition_bytes,
            synthesis_bytes,
        }
    }
}

/// Whether `id` is a plain file stem: no separators, no leading dot, nothing odd.
pub fn valid_key_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::valid_key_id;

    #[test]
    fn key_ids_cannot_name_other_paths() {
        for ok in ["poseidon", "bn254-multi_public", "v1.2"] {
            assert!(valid_key_id(ok), "{ok}");
        }
        for bad in ["", "..", "../x", "a/b", ".hidden", "a\\b", "x\0y", "é"] {
            assert!(!valid_key_id(bad), "{bad:?}");
        }
    }
}
