//! A streamed job's plan: what its header declared, checked before any witness byte
//! arrives (`crate::Engine::plan_stream`), and the check of each witness's first bytes
//! against its key as they arrive ([`StreamPlan::check_start`]), so that a wrong witness is
//! refused before its gigabytes cross the network.

use crate::error::EngineError;
use crate::jobs::Reservation;
use zkpipe_formats::packed_wtns;
use zkpipe_formats::CurveId;

/// A streamed job whose header passed [`crate::Engine::plan_stream`]: its key's curve and
/// witness length, to check each witness by its first bytes, and its partitions' places
/// under `max_pending_partitions`, held until the job is submitted with it
/// ([`crate::Engine::submit_streamed`]) and given back if it is dropped instead.
#[derive(Debug)]
pub struct StreamPlan {
    pub(crate) key: String,
    pub(crate) curve: CurveId,
    pub(crate) n_vars: usize,
    pub(crate) sizes: Vec<u64>,
    pub(crate) reserved: Reservation,
}

/// A `.wtns` file's fixed opening: magic, version, section count (4 bytes each), then the
/// first section's id (4) and length (8).
const WTNS_OPENING: usize = 24;

impl StreamPlan {
    /// Bytes of a witness's start that [`check_start`](Self::check_start) reads (fewer
    /// when the witness is shorter): a `.wtns` header with its 32-byte prime.
    pub const HEAD_BYTES: usize = WTNS_OPENING + 4 + 32 + 4;

    /// Bytes of a witness's start that [`check_start`](Self::check_start) reads, given
    /// its first bytes so far: [`Self::HEAD_BYTES`], and a packed witness's own few bytes
    /// before its `.wtns` head once its magic has arrived. It only grows as bytes arrive.
    pub fn head_bytes(start: &[u8]) -> usize {
        if start.starts_with(packed_wtns::MAGIC) {
            packed_wtns::HEAD_AT + Self::HEAD_BYTES
        } else {
            Self::HEAD_BYTES
        }
    }

    /// The declared size of each partition, in order.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Checks partition `i`'s first bytes (up to [`Self::HEAD_BYTES`]) against the key: a
    /// `.wtns` of another curve or signal count, or whose declared size is not the size
    /// such a file has, is refused now. Anything else (circuit inputs, an unusual but
    /// valid layout, a witness too short to tell) is left to the full check at submit.
    /// A packed witness ([`packed_wtns`]) is checked by the `.wtns` head it carries; its
    /// size depends on its values.
    pub fn check_start(&self, i: usize, head: &[u8]) -> Result<(), EngineError> {
        match packed_wtns::head_of(head) {
            Some(wtns_head) => self.check_wtns_head(i, wtns_head, None),
            None => self.check_wtns_head(i, head, Some(self.sizes.get(i).copied().unwrap_or(0))),
        }
    }

    /// [`Self::check_start`] of a `.wtns` head, and of its declared size where given.
    fn check_wtns_head(
        &self,
        i: usize,
        head: &[u8],
        declared: Option<u64>,
    ) -> Result<(), EngineError> {
        let u32_at = |at: usize| {
            head.get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
        };
        if head.len() < WTNS_OPENING + 4 || !head.starts_with(b"wtns") {
            return Ok(());
        }
        // Two sections, the header first: the layout snarkjs and circom write.
        if u32_at(8) != Some(2) || u32_at(12) != Some(1) {
            return Ok(());
        }
        let Some(n8) = u32_at(WTNS_OPENING).map(|n| n as usize) else {
            return Ok(());
        };
        let prime_at = WTNS_OPENING + 4;
        let (Some(prime), Some(n_witness)) =
            (head.get(prime_at..prime_at + n8), u32_at(prime_at + n8))
        else {
            return Ok(());
        };
        let found = CurveId::from_r_le(prime);
        if let Some(found) = found.filter(|&c| c != self.curve) {
            return Err(EngineError::WrongCurve {
                partition: i,
                key: self.key.clone(),
                found,
                expected: self.curve,
            });
        }
        if n_witness as usize != self.n_vars {
            return Err(EngineError::WitnessMismatch {
                partition: i,
                key: self.key.clone(),
                expected: self.n_vars,
                found: n_witness as usize,
            });
        }
        // Opening, header section (n8, prime, count), values' section header, values.
        let expected = (WTNS_OPENING + 4 + n8 + 4 + 12) as u64 + self.n_vars as u64 * n8 as u64;
        let Some(declared) = declared else {
            return Ok(());
        };
        if declared != expected {
            return Err(EngineError::MalformedWitness {
                partition: i,
                message: format!(
                    "declared as {declared} bytes, but a .wtns of {} values is {expected} bytes",
                    self.n_vars
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_formats::wtns::Wtns;

    fn wtns(curve: CurveId, n: u32) -> Vec<u8> {
        Wtns {
            curve,
            n_witness: n,
            values: vec![0u8; n as usize * 32],
        }
        .to_bytes()
    }

    fn plan(sizes: Vec<u64>) -> StreamPlan {
        StreamPlan {
            key: "k".into(),
            curve: CurveId::Bn254,
            n_vars: 5,
            sizes,
            reserved: Reservation::none(),
        }
    }

    /// The size `check_start` expects is the size snarkjs's layout has, and every
    /// mismatch it can see in the first bytes is refused in one line.
    #[test]
    fn a_witness_start_is_checked_against_the_key() {
        let good = wtns(CurveId::Bn254, 5);
        let head = &good[..StreamPlan::HEAD_BYTES];
        plan(vec![good.len() as u64]).check_start(0, head).unwrap();
        let e = plan(vec![good.len() as u64 + 1])
            .check_start(0, head)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "partition 0: malformed witness: declared as {} bytes, but a .wtns of 5 values is {} bytes",
                good.len() + 1,
                good.len()
            )
        );
        let other = wtns(CurveId::Bn254, 4);
        let e = plan(vec![0, other.len() as u64])
            .check_start(1, &other[..StreamPlan::HEAD_BYTES])
            .unwrap_err();
        assert!(
            matches!(
                e,
                EngineError::WitnessMismatch {
                    partition: 1,
                    found: 4,
                    ..
                }
            ),
            "{e}"
        );
        let bls = wtns(CurveId::Bls12_381, 5);
        let e = plan(vec![bls.len() as u64])
            .check_start(0, &bls[..StreamPlan::HEAD_BYTES])
            .unwrap_err();
        assert!(matches!(e, EngineError::WrongCurve { .. }), "{e}");
        // Circuit inputs and short starts are left to the full check.
        plan(vec![9]).check_start(0, b"{\"a\": 1}\n").unwrap();
        plan(vec![9]).check_start(0, &good[..20]).unwrap();
    }

    /// A packed witness is checked by the `.wtns` head it carries, whatever size it
    /// declares (its size depends on its values).
    #[test]
    fn a_packed_witness_start_is_checked_by_its_head() {
        let start = |curve, n| {
            let packed = packed_wtns::pack(&wtns(curve, n)).expect("zeros pack");
            let head = StreamPlan::head_bytes(&packed);
            assert_eq!(head, StreamPlan::HEAD_BYTES + 10);
            packed[..head.min(packed.len())].to_vec()
        };
        plan(vec![40])
            .check_start(0, &start(CurveId::Bn254, 5))
            .unwrap();
        let e = plan(vec![40])
            .check_start(0, &start(CurveId::Bn254, 4))
            .unwrap_err();
        assert!(
            matches!(e, EngineError::WitnessMismatch { found: 4, .. }),
            "{e}"
        );
        let e = plan(vec![40])
            .check_start(0, &start(CurveId::Bls12_381, 5))
            .unwrap_err();
        assert!(matches!(e, EngineError::WrongCurve { .. }), "{e}");
    }
}
