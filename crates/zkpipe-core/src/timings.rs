//! Timings as data, in one vocabulary: [`Stage`] names every span a proof's time is
//! counted in, from the engine's queues and stages to the one-shot prover's steps. The
//! CLI's `--timings`, the bench, the engine's waterfall, its metrics and its stores all
//! read the same spans under the same names.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// A named span of a proof's life: a step of loading or proving, or a wait before one of
/// the engine's stages. Its [`name`](Stage::name) is what every output calls it; it is
/// serialised by that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Submit → admitted into the engine's pipeline (memory admission and priority queue).
    QueueWait,
    /// Waiting for the synthesis stage.
    SynthesizeWait,
    /// Witness synthesis from circuit inputs.
    Synthesize,
    /// Waiting for the reduce stage.
    ReduceWait,
    /// Loading the proving key: mapping, validating and compiling it (in the engine, the
    /// wait for its key cache, zero when the key is resident).
    KeyLoad,
    /// Placing the key's points on the device (GPU backends; once per key).
    Upload,
    /// Reading the witness.
    LoadWitness,
    /// a = A·w, b = B·w, c = a∘b (on the CPU; there it also turns w into MSM scalars).
    Reduce,
    /// a, b, c computed by the device from w (backends that reduce on the device).
    ReduceDevice,
    /// Waiting for the device (its queue, memory and lock).
    DeviceWait,
    /// The engine's device stage: device work with the lock held (quotient and G1 MSMs).
    Device,
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
    /// Waiting for the tail stage.
    TailWait,
    /// The engine's tail stage (G2 MSM on CPU, assemble, self-check, serialize).
    Tail,
    /// Adding α, β, δ terms with fresh r, s.
    Assemble,
    /// Pairing check of the new proof.
    Verify,
    /// Writing output files.
    Write,
    /// Writing the proof to the engine's job store.
    Record,
}

impl Stage {
    /// How many stages there are.
    pub const COUNT: usize = 24;

    /// Every stage in pipeline order (the order of [`Ord`]).
    pub const ALL: [Stage; Stage::COUNT] = [
        Stage::QueueWait,
        Stage::SynthesizeWait,
        Stage::Synthesize,
        Stage::ReduceWait,
        Stage::KeyLoad,
        Stage::Upload,
        Stage::LoadWitness,
        Stage::Reduce,
        Stage::ReduceDevice,
        Stage::DeviceWait,
        Stage::Device,
        Stage::Quotient,
        Stage::MsmA,
        Stage::MsmB1,
        Stage::MsmB2,
        Stage::MsmC,
        Stage::MsmH,
        Stage::MsmBatch,
        Stage::TailWait,
        Stage::Tail,
        Stage::Assemble,
        Stage::Verify,
        Stage::Write,
        Stage::Record,
    ];

    /// Its name in tables, JSON, metrics labels and traces.
    pub fn name(self) -> &'static str {
        match self {
            Stage::QueueWait => "queue_wait",
            Stage::SynthesizeWait => "synthesize_wait",
            Stage::Synthesize => "synthesize",
            Stage::ReduceWait => "reduce_wait",
            Stage::KeyLoad => "key_load",
            Stage::Upload => "upload",
            Stage::LoadWitness => "load_witness",
            Stage::Reduce => "reduce",
            Stage::ReduceDevice => "reduce_device",
            Stage::DeviceWait => "device_wait",
            Stage::Device => "device",
            Stage::Quotient => "quotient",
            Stage::MsmA => "msm_a",
            Stage::MsmB1 => "msm_b1",
            Stage::MsmB2 => "msm_b2_g2",
            Stage::MsmC => "msm_c",
            Stage::MsmH => "msm_h",
            Stage::MsmBatch => "msm_batch",
            Stage::TailWait => "tail_wait",
            Stage::Tail => "tail",
            Stage::Assemble => "assemble",
            Stage::Verify => "verify",
            Stage::Write => "write",
            Stage::Record => "record",
        }
    }

    /// Its position in [`Stage::ALL`], for tables indexed by stage.
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for a wait before one of the engine's stages rather than work.
    pub fn is_wait(self) -> bool {
        matches!(
            self,
            Stage::QueueWait
                | Stage::SynthesizeWait
                | Stage::ReduceWait
                | Stage::DeviceWait
                | Stage::TailWait
        )
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A name that is no [`Stage`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stage {0:?}")]
pub struct UnknownStage(pub String);

impl FromStr for Stage {
    type Err = UnknownStage;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Stage::ALL
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| UnknownStage(s.to_string()))
    }
}

impl serde::Serialize for Stage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Stage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
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

    #[test]
    fn every_stage_has_one_name_that_parses_back() {
        for (i, stage) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(stage.index(), i, "ALL is in declaration order");
            assert_eq!(stage.name().parse::<Stage>(), Ok(stage));
            assert_eq!(stage.to_string(), stage.name());
        }
        let mut names: Vec<_> = Stage::ALL.iter().map(|s| s.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Stage::COUNT);
        assert_eq!(
            "queued".parse::<Stage>(),
            Err(UnknownStage("queued".into()))
        );
    }

    #[test]
    fn stages_serialise_by_name() {
        let json = serde_json::to_string(&[Stage::QueueWait, Stage::MsmB2]).unwrap();
        assert_eq!(json, r#"["queue_wait","msm_b2_g2"]"#);
        let back: Vec<Stage> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [Stage::QueueWait, Stage::MsmB2]);
        assert!(serde_json::from_str::<Stage>(r#""nope""#).is_err());
    }
}
