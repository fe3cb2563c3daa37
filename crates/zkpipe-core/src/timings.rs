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
    /// a = A·w, b = B·w, c = a∘b.
    Reduce,
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
    /// Adding α, β, δ terms with fresh r, s.
    Assemble,
    /// Pairing check of the new proof.
    Verify,
    /// Writing output files.
    Write,
}

impl Stage {
    /// Every stage in pipeline order.
    pub const ALL: [Stage; 13] = [
        Stage::LoadKey,
        Stage::Upload,
        Stage::LoadWitness,
        Stage::Reduce,
        Stage::Quotient,
        Stage::MsmA,
        Stage::MsmB1,
        Stage::MsmB2,
        Stage::MsmC,
        Stage::MsmH,
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
            Stage::Quotient => "quotient",
            Stage::MsmA => "msm_a",
            Stage::MsmB1 => "msm_b1",
            Stage::MsmB2 => "msm_b2_g2",
            Stage::MsmC => "msm_c",
            Stage::MsmH => "msm_h",
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
        let _span = tracing::debug_span!("stage", name = stage.name()).entered();
        let start = Instant::now();
        let out = f();
        self.spans.push(Span {
            stage,
            start,
            end: Instant::now(),
        });
        out
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
