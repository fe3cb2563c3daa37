//! What a key's header says and what the key costs in memory, read before it is loaded.

use crate::curves::curve;
use std::path::{Path, PathBuf};
use zkpipe_core::device::{BindOptions, Caps, KeyShape};
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
    /// From a mapped key; `caps` is what its device's pass will do
    /// ([`zkpipe_core::Devices::caps`]), `device_host_bytes` what the device holds on the
    /// host per partition ([`zkpipe_core::Devices::partition_host_bytes`]), `bind` how it
    /// binds.
    pub(crate) fn from_zkey(
        id: &str,
        path: &Path,
        z: &ZkeyFile,
        caps: &Caps,
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
        let partition_bytes = engine_partition_bytes(&shape, caps) + device_host_bytes;
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

/// Host bytes the engine's own stages hold for one partition of a key of `shape` whose
/// device pass does what `caps` says (what the device itself holds is its own
/// [`zkpipe_core::Devices::partition_host_bytes`]), 32 bytes a value:
/// - the witness (n_vars), and its MSM scalars (n_vars) where the reduce stage makes them
///   ([`Caps::wants_scalars`]; a device reading the field elements converts them itself);
/// - h as MSM scalars (domain): the device stage takes that buffer whatever the device;
/// - where the device does not reduce ([`Caps::reduces`]), a, b and c (3 × domain) and a
///   domain vector of headroom for the host quotient; where it does, none of them exists
///   on the host (at 2^25 on a GPU, 2^25 signals: 3.22 GB a partition with the staging
///   of w, against the 10.74 GB counted before, lab/experiments/043j-reference-regime.md);
/// - 1 MiB of MSM scratch.
fn engine_partition_bytes(shape: &KeyShape, caps: &Caps) -> u64 {
    let (n_vars, n) = (shape.n_vars, shape.domain_size);
    let scalars = if caps.wants_scalars() { n_vars } else { 0 };
    let evals = if caps.reduces { 0 } else { 4 * n };
    (32 * (n_vars + scalars + n + evals) + (1 << 20)) as u64
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
    use super::{engine_partition_bytes, valid_key_id};
    use zkpipe_core::cpu::CPU_CAPS;
    use zkpipe_core::device::{Caps, KeyShape};
    use zkpipe_formats::CurveId;

    /// 2^25 signals over a 2^25 domain, as the reference regime's key.
    const SHAPE: KeyShape = KeyShape {
        curve: CurveId::Bls12_381,
        n_vars: 1 << 25,
        n_public: 1,
        domain_size: 1 << 25,
        n_coefficients: 1 << 26,
    };

    /// A device that reduces (a GPU: it reads the field elements too) costs the engine the
    /// witness and h's scalars alone; one that does not (the CPU) a, b, c, the headroom
    /// and w's scalars too, as before.
    #[test]
    fn the_domain_vectors_count_only_where_the_device_does_not_reduce() {
        let (v, mib) = (32u64 << 25, 1u64 << 20);
        let gpu = Caps {
            reduces: true,
            montgomery_w: true,
            ..CPU_CAPS
        };
        assert_eq!(engine_partition_bytes(&SHAPE, &gpu), 2 * v + mib);
        let converts_on_host = Caps {
            montgomery_w: false,
            ..gpu
        };
        assert_eq!(
            engine_partition_bytes(&SHAPE, &converts_on_host),
            3 * v + mib
        );
        assert_eq!(engine_partition_bytes(&SHAPE, &CPU_CAPS), 7 * v + mib);
        // The CPU's masked pass makes w's scalars itself (counted as its own).
        let masked = Caps {
            montgomery_w: true,
            ..CPU_CAPS
        };
        assert_eq!(engine_partition_bytes(&SHAPE, &masked), 6 * v + mib);
    }

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
