//! Step 1, reduce: the witness through the constraint matrices, a = A·w, b = B·w,
//! c = a∘b, evaluated at every row of the domain.
//!
//! Rows are inhomogeneous (a Poseidon round next to a one-term copy), so rows are handed
//! out in small chunks that idle threads claim (rayon's work stealing), not as one fixed
//! range per thread.

use crate::csr::Csr;
use ark_ff::Field;
use rayon::prelude::*;

/// How rows are spread over the threads of the current rayon pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSchedule {
    /// One contiguous range per thread (the baseline that stragglers hurt).
    Static,
    /// Threads claim chunks of this many rows from a shared atomic counter.
    Dynamic(usize),
    /// rayon's work stealing over chunks of this many rows.
    Stealing(usize),
}

/// The schedule used unless configured otherwise.
pub const DEFAULT_SCHEDULE: RowSchedule = RowSchedule::Dynamic(64);

impl std::str::FromStr for RowSchedule {
    type Err = String;

    /// `static`, `dynamic:<rows>` or `stealing:<rows>`.
    fn from_str(s: &str) -> Result<Self, String> {
        let rows = |v: &str| -> Result<usize, String> {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("bad chunk size {v:?} in schedule {s:?}"))
        };
        match s.split_once(':') {
            None if s == "static" => Ok(RowSchedule::Static),
            Some(("dynamic", v)) => Ok(RowSchedule::Dynamic(rows(v)?)),
            Some(("stealing", v)) => Ok(RowSchedule::Stealing(rows(v)?)),
            _ => Err(format!(
                "schedule {s:?} is not static, dynamic:<rows> or stealing:<rows>"
            )),
        }
    }
}

impl std::fmt::Display for RowSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowSchedule::Static => write!(f, "static"),
            RowSchedule::Dynamic(n) => write!(f, "dynamic:{n}"),
            RowSchedule::Stealing(n) => write!(f, "stealing:{n}"),
        }
    }
}

/// The three vectors a, b, c over the domain; after [`crate::quotient`], `a` holds h.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QapEvals<F> {
    /// A·w, then h after the quotient stage.
    pub a: Vec<F>,
    /// B·w.
    pub b: Vec<F>,
    /// (A·w)∘(B·w).
    pub c: Vec<F>,
}

impl<F: Field> QapEvals<F> {
    /// Zeroed buffers for a domain of `n` rows.
    pub fn zeroed(n: usize) -> Self {
        Self {
            a: vec![F::ZERO; n],
            b: vec![F::ZERO; n],
            c: vec![F::ZERO; n],
        }
    }

    /// The quotient evaluations, valid after the quotient stage.
    pub fn h(&self) -> &[F] {
        &self.a
    }
}

/// Computes a, b, c for every row into `out` (which must have the matrices' row count).
pub fn reduce<F: Field>(
    a: &Csr<F>,
    b: &Csr<F>,
    w: &[F],
    out: &mut QapEvals<F>,
    schedule: RowSchedule,
) {
    let rows = out.a.len();
    let chunk = match schedule {
        RowSchedule::Static => rows.div_ceil(rayon::current_num_threads()).max(1),
        RowSchedule::Dynamic(n) | RowSchedule::Stealing(n) => n.max(1),
    };
    let chunks = out
        .a
        .chunks_mut(chunk)
        .zip(out.b.chunks_mut(chunk))
        .zip(out.c.chunks_mut(chunk))
        .enumerate()
        .map(|(k, ((oa, ob), oc))| (k * chunk, oa, ob, oc));
    let fill = |(first, oa, ob, oc): (usize, &mut [F], &mut [F], &mut [F])| {
        crate::throttle::check(first / chunk);
        for i in 0..oa.len() {
            let (x, y) = (a.dot(first + i, w), b.dot(first + i, w));
            oa[i] = x;
            ob[i] = y;
            oc[i] = x * y;
        }
    };
    match schedule {
        // One task per thread; no stealing below that granularity.
        RowSchedule::Static => chunks
            .collect::<Vec<_>>()
            .into_par_iter()
            .with_max_len(1)
            .for_each(fill),
        RowSchedule::Stealing(_) => chunks.collect::<Vec<_>>().into_par_iter().for_each(fill),
        RowSchedule::Dynamic(_) => {
            // Each chunk sits behind its own (never contended) lock, so claiming by counter
            // needs no unsafe code.
            let slots: Vec<_> = chunks.map(|c| std::sync::Mutex::new(Some(c))).collect();
            let next = std::sync::atomic::AtomicUsize::new(0);
            rayon::broadcast(|_| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(slot) = slots.get(k) else { break };
                let claimed = slot.lock().ok().and_then(|mut g| g.take());
                if let Some(c) = claimed {
                    fill(c);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bn254::Fr;
    use ark_std::UniformRand;

    #[test]
    fn every_schedule_computes_the_same_rows() {
        let rng = &mut ark_std::test_rng();
        let rows = 1000;
        let n_vars = 50;
        let mut m = Csr::<Fr> {
            row_starts: vec![0],
            cols: vec![],
            vals: vec![],
        };
        for r in 0..rows {
            for k in 0..(r % 7) * (r % 13) {
                m.cols.push(((r + k * 3) % n_vars) as u32);
                m.vals.push(Fr::rand(rng));
            }
            m.row_starts.push(m.cols.len() as u32);
        }
        let w: Vec<Fr> = (0..n_vars).map(|_| Fr::rand(rng)).collect();
        let expected: Vec<Fr> = (0..rows).map(|r| m.dot(r, &w)).collect();
        for s in [
            "static",
            "dynamic:1",
            "dynamic:64",
            "dynamic:5000",
            "stealing:16",
        ] {
            let schedule: RowSchedule = s.parse().unwrap();
            let mut out = QapEvals::zeroed(rows);
            reduce(&m, &m, &w, &mut out, schedule);
            assert_eq!(out.a, expected, "{s}");
            let squares: Vec<Fr> = expected.iter().map(|x| x.square()).collect();
            assert_eq!(out.c, squares, "{s}");
        }
        assert!("dynamic:0".parse::<RowSchedule>().is_err());
        assert!("fast".parse::<RowSchedule>().is_err());
    }
}
