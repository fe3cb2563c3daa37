//! Stage timings as data: every stage records a span, and the CLI, the bench and (later)
//! the engine's waterfall read the same numbers.

use std::fmt;
use std::time::{Duration, Instant};

/// A named step of loading or proving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Mapping, validating and compiling the proving key.
    LoadKey,
    /// Placing the key's points on the device (GPU backends; once per key).
    Upload,
    /// Reading the witness.
    LoadWitness,
    /// a = A·w, b = B·w, c = a∘b (on the CPU; there it also turns w into MSM scalars).
    Reduce,
    /// a, b, c computed by the device from w (backends that reduce on the device).
    ReduceDevice,
    /// iNTT, coset NTT, h = a·b − c on the coset.
    Quotient,
    /// Σ wᵢ·Aᵢ in G1.
    MsmA,
    /// Σ wᵢ·B₁ᵢ in G1.
    MsmB1,
    /// Σ wᵢ·B₂ᵢ in G2.
    MsmB2,
    /// Σ wᵢ·Cᵢ over private signals in G1.
    MsmC,
    /// Σ hⱼ·Hⱼ in G1.
    MsmH,
    /// The five MSMs of several proofs of one key at once (a batched device pass; the
    /// proofs share it, so each proof's span is the whole batch's).
    MsmBatch,
    /// Adding α, β, δ terms with fresh r, s.
    Assemble,
    /// Pairing check of the new proof.
    Verify,
    /// Writing output files.
    Write,
}

impl Stage {
    /// Every stage in pipeline order.
    pub const ALL: [Stage; 15] = [
        Stage::LoadKey,
        Stage::Upload,
        Stage::LoadWitness,
        Stage::Reduce,
        Stage::ReduceDevice,
        Stage::Quotient,
        Stage::MsmA,
        Stage::MsmB1,
        Stage::MsmB2,
        Stage::MsmC,
        Stage::MsmH,
        Stage::MsmBatch,
        Stage::Assemble,
        Stage::Verify,
        Stage::Write,
    ];

    /// Short name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Stage::LoadKey => "load_key",
            Stage::Upload => "upload",
            Stage::LoadWitness => "load_witness",
            Stage::Reduce => "reduce",
            Stage::ReduceDevice => "reduce_device",
            Stage::Quotient => "quotient",
            Stage::MsmA => "msm_a",
            Stage::MsmB1 => "msm_b1",
            Stage::MsmB2 => "msm_b2_g2",
            Stage::MsmC => "msm_c",
            Stage::MsmH => "msm_h",
            Stage::MsmBatch => "msm_batch",
            Stage::Assemble => "assemble",
            Stage::Verify => "verify",
            Stage::Write => "write",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One stage's start and end.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// Which stage.
    pub stage: Stage,
    /// When it began.
    pub start: Instant,
    /// When it ended.
    pub end: Instant,
}

impl Span {
    /// Its length.
    pub fn duration(&self) -> Duration {
        self.end - self.start
    }
}

/// The spans recorded while loading and proving.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    /// Spans in the order they ended.
    pub spans: Vec<Span>,
}

impl Timings {
    /// Runs `f` as `stage`, recording its span.
    pub fn time<T>(&mut self, stage: Stage, f: impl FnOnce() -> T) -> T {
        let (out, span) = timed(stage, f);
        self.spans.push(span);
        out
    }

    /// Wall time covered by the spans: the length of their union, so stages that ran
    /// concurrently (a backend may overlap its MSMs) count once. Without overlaps this is
    /// the sum of the stages' times.
    pub fn wall(&self) -> Duration {
        union_length(self.spans.iter())
    }

    /// Wall time covered by the spans of `stages` (the length of their union).
    pub fn wall_of(&self, stages: &[Stage]) -> Duration {
        union_length(self.spans.iter().filter(|s| stages.contains(&s.stage)))
    }

    /// True if some spans of `stages` overlap in time (they ran concurrently).
    pub fn overlapping(&self, stages: &[Stage]) -> bool {
        let sum: Duration = self
            .spans
            .iter()
            .filter(|s| stages.contains(&s.stage))
            .map(Span::duration)
            .sum();
        sum > self.wall_of(stages)
    }

    /// Total time spent in `stage` (summed if it ran several times).
    pub fn total(&self, stage: Stage) -> Duration {
        self.spans
            .iter()
            .filter(|s| s.stage == stage)
            .map(Span::duration)
            .sum()
    }
}

/// Runs `f` as `stage` and returns its span without recording it: for stages that run
/// concurrently, each measuring its own span, pushed into [`Timings::spans`] afterwards.
pub fn timed<T>(stage: Stage, f: impl FnOnce() -> T) -> (T, Span) {
    let _span = tracing::debug_span!("stage", name = stage.name()).entered();
    let start = Instant::now();
    let out = f();
    let span = Span {
        stage,
        start,
        end: Instant::now(),
    };
    (out, span)
}

/// The length of the union of `spans`.
fn union_length<'a>(spans: impl Iterator<Item = &'a Span>) -> Duration {
    let mut v: Vec<(Instant, Instant)> = spans.map(|s| (s.start, s.end)).collect();
    v.sort();
    let mut total = Duration::ZERO;
    let mut current: Option<(Instant, Instant)> = None;
    for (start, end) in v {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        total += e - s;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_counts_overlaps_once() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let span = |stage, a, b| Span {
            stage,
            start: ms(a),
            end: ms(b),
        };
        let t = Timings {
            spans: vec![
                span(Stage::Reduce, 0, 10),
                span(Stage::MsmA, 10, 40),
                span(Stage::MsmB1, 20, 50),
                span(Stage::MsmC, 30, 35),
                span(Stage::Assemble, 60, 61),
            ],
        };
        assert_eq!(t.wall(), Duration::from_millis(51));
        let msms = [Stage::MsmA, Stage::MsmB1, Stage::MsmC];
        assert_eq!(t.wall_of(&msms), Duration::from_millis(40));
        assert!(t.overlapping(&msms));
        assert!(!t.overlapping(&[Stage::Reduce, Stage::MsmA, Stage::Assemble]));
    }
}
