//! The waterfall: every partition's stage spans and waits, plus each device's lock-held
//! spans, kept for the last N partitions and exported as Chrome-trace JSON (open it in
//! Perfetto, ui.perfetto.dev, or chrome://tracing).
//!
//! Layout of the export: process 1 "partitions" has one track per partition, named
//! "job J part P (key)", with spans named by [`Stage::name`]: `queue_wait`,
//! `synthesize_wait`, `synthesize` (partitions submitted with circuit inputs),
//! `reduce_wait`, `key_load`, `reduce`, `device_wait`, `device`, `tail_wait`, `tail`,
//! `record` (the proof's store write); process 2 "devices" has one track per device with a span
//! for every time its lock was held. Waits have category `wait`, work has `stage`.

use crate::job::{JobId, ProofTimings};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zkpipe_core::timings::{Span, Stage};

/// One partition's waterfall.
#[derive(Debug, Clone)]
pub struct PartitionTrace {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: usize,
    /// Its key.
    pub key_id: String,
    /// When the job was submitted.
    pub submitted: Instant,
    /// Spans in the order they were recorded.
    pub spans: Vec<Span>,
}

impl PartitionTrace {
    /// A trace starting at `submitted`.
    pub fn new(job: JobId, index: usize, key_id: String, submitted: Instant) -> Self {
        Self {
            job,
            index,
            key_id,
            submitted,
            spans: Vec::new(),
        }
    }

    /// Records a span.
    pub fn span(&mut self, stage: Stage, start: Instant, end: Instant) {
        self.spans.push(Span { stage, start, end });
    }

    /// The per-proof timings these spans add up to (each stage's spans summed), `total`
    /// measured to `end`.
    pub fn timings(&self, end: Instant) -> ProofTimings {
        let mut t = ProofTimings {
            total: end.saturating_duration_since(self.submitted),
            ..ProofTimings::default()
        };
        for s in &self.spans {
            t.add(s.stage, s.end.saturating_duration_since(s.start));
        }
        t
    }
}

#[derive(Debug, Clone, Copy)]
struct DeviceSpan {
    device: usize,
    job: JobId,
    index: usize,
    start: Instant,
    end: Instant,
}

/// Keeps recent waterfalls (see the module doc).
pub struct Tracer {
    epoch: Instant,
    capacity: usize,
    partitions: Mutex<VecDeque<PartitionTrace>>,
    /// One ring per device: a device records its spans with its gate held, and no
    /// device waits for another's record.
    devices: Vec<Mutex<VecDeque<DeviceSpan>>>,
    device_names: Vec<String>,
}

impl Tracer {
    /// Keeps the last `capacity` partitions (and as many spans of each device).
    pub fn new(capacity: usize, device_names: Vec<String>) -> Self {
        Self {
            epoch: Instant::now(),
            capacity,
            partitions: Mutex::new(VecDeque::new()),
            devices: device_names
                .iter()
                .map(|_| Mutex::new(VecDeque::new()))
                .collect(),
            device_names,
        }
    }

    /// Records a finished (or abandoned) partition.
    pub fn record(&self, t: PartitionTrace) {
        if self.capacity == 0 {
            return;
        }
        let mut q = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() == self.capacity {
            q.pop_front();
        }
        q.push_back(t);
    }

    /// Records a span with a device's lock held.
    pub fn device_span(
        &self,
        device: usize,
        job: JobId,
        index: usize,
        start: Instant,
        end: Instant,
    ) {
        // A device the tracer was not told of (none is) has no track to draw on.
        let Some(ring) = self.devices.get(device).filter(|_| self.capacity > 0) else {
            return;
        };
        let mut q = ring.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() == self.capacity {
            q.pop_front();
        }
        q.push_back(DeviceSpan {
            device,
            job,
            index,
            start,
            end,
        });
    }

    /// Forgets everything recorded so far.
    pub fn clear(&self) {
        self.partitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        for ring in &self.devices {
            ring.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
    }

    fn us(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.epoch).as_secs_f64() * 1e6
    }

    /// The Chrome-trace JSON document (`{"traceEvents": [...]}`), in one string.
    pub fn chrome_json(&self) -> String {
        let mut out = Vec::new();
        // Writing to a `Vec` fails only if serializing does, which a `Value` of strings
        // and numbers never does; the document is UTF-8 by construction.
        let _ = self.write_chrome_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Writes the Chrome-trace JSON document to `out` one event at a time, so that an
    /// export holds one small event in memory besides a copy of the recorded spans (a
    /// tree of every event took ~150 MiB of heap for 4,096 partitions,
    /// lab/experiments/036-finished-job-memory.md). The bytes are those of
    /// `{"displayTimeUnit": "ms", "traceEvents": [...]}` serialized whole.
    pub fn write_chrome_json(&self, mut out: impl Write) -> io::Result<()> {
        let parts = self
            .partitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let devs: Vec<DeviceSpan> = self
            .devices
            .iter()
            .flat_map(|ring| ring.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect();
        let mut events = Events::new(&mut out)?;
        events.put(
            json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "partitions"}}),
        )?;
        events.put(
            json!({"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "devices"}}),
        )?;
        for (i, name) in self.device_names.iter().enumerate() {
            events.put(json!({"ph": "M", "pid": 2, "tid": i, "name": "thread_name", "args": {"name": name}}))?;
        }
        for (tid, p) in parts.iter().enumerate() {
            events.put(
                json!({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name",
                "args": {"name": format!("job {} part {} ({})", p.job, p.index, p.key_id)}}),
            )?;
            for s in &p.spans {
                let cat = if s.stage.is_wait() { "wait" } else { "stage" };
                events.put(
                    json!({"ph": "X", "pid": 1, "tid": tid, "name": s.stage, "cat": cat,
                    "ts": self.us(s.start), "dur": self.us(s.end) - self.us(s.start),
                    "args": {"job": p.job, "partition": p.index, "key": p.key_id}}),
                )?;
            }
        }
        for d in devs {
            events.put(json!({"ph": "X", "pid": 2, "tid": d.device, "name": format!("job {} part {}", d.job, d.index),
                "cat": "device", "ts": self.us(d.start), "dur": self.us(d.end) - self.us(d.start)}))?;
        }
        events.end()
    }
}

/// The `traceEvents` array being written: the document's head, then each event with its
/// separator, then the tail. Keys are in the order `serde_json` writes an object's (sorted).
struct Events<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Events<W> {
    fn new(mut out: W) -> io::Result<Self> {
        out.write_all(br#"{"displayTimeUnit":"ms","traceEvents":["#)?;
        Ok(Self { out, first: true })
    }

    fn put(&mut self, event: Value) -> io::Result<()> {
        if !std::mem::take(&mut self.first) {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut self.out, &event).map_err(io::Error::from)
    }

    fn end(mut self) -> io::Result<()> {
        self.out.write_all(b"]}")?;
        self.out.flush()
    }
}

/// A duration in milliseconds, rounded to 0.1 ms, for log fields.
pub(crate) fn log_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_is_chrome_trace_json_with_one_track_per_partition() {
        let tr = Tracer::new(2, vec!["cpu".into()]);
        let t0 = Instant::now();
        for job in 0..3 {
            let mut p = PartitionTrace::new(job, 0, "k".into(), t0);
            p.span(Stage::QueueWait, t0, t0 + Duration::from_millis(1));
            p.span(
                Stage::Reduce,
                t0 + Duration::from_millis(1),
                t0 + Duration::from_millis(3),
            );
            tr.record(p);
        }
        tr.device_span(0, 2, 0, t0, t0 + Duration::from_millis(2));
        let v: Value = serde_json::from_str(&tr.chrome_json()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let spans: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(
            spans.len(),
            2 * 2 + 1,
            "capacity 2 keeps the last two partitions"
        );
        assert!(spans.iter().all(|e| e["dur"].as_f64().unwrap() >= 0.0));
        assert_eq!(spans[0]["name"], "queue_wait");
        assert_eq!(spans[0]["cat"], "wait");
        assert_eq!(spans[1]["name"], "reduce");
        assert_eq!(spans[1]["cat"], "stage");
        let p = PartitionTrace {
            spans: vec![
                Span {
                    stage: Stage::Reduce,
                    start: t0,
                    end: t0 + Duration::from_millis(5),
                },
                Span {
                    stage: Stage::Reduce,
                    start: t0 + Duration::from_millis(6),
                    end: t0 + Duration::from_millis(7),
                },
            ],
            ..PartitionTrace::new(1, 0, "k".into(), t0)
        };
        let t = p.timings(t0 + Duration::from_millis(9));
        assert_eq!(t.get(Stage::Reduce), Duration::from_millis(6));
        assert_eq!(t.get(Stage::Device), Duration::ZERO);
        assert_eq!(t.total, Duration::from_millis(9));
    }

    /// The whole document as one `Value`, built as the export was before it was
    /// streamed: the streamed bytes must be these.
    fn as_one_value(tr: &Tracer) -> String {
        let mut ev = vec![
            json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "partitions"}}),
            json!({"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "devices"}}),
        ];
        for (i, name) in tr.device_names.iter().enumerate() {
            ev.push(json!({"ph": "M", "pid": 2, "tid": i, "name": "thread_name", "args": {"name": name}}));
        }
        for (tid, p) in tr.partitions.lock().unwrap().iter().enumerate() {
            ev.push(
                json!({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name",
                "args": {"name": format!("job {} part {} ({})", p.job, p.index, p.key_id)}}),
            );
            for s in &p.spans {
                let cat = if s.stage.is_wait() { "wait" } else { "stage" };
                ev.push(
                    json!({"ph": "X", "pid": 1, "tid": tid, "name": s.stage, "cat": cat,
                    "ts": tr.us(s.start), "dur": tr.us(s.end) - tr.us(s.start),
                    "args": {"job": p.job, "partition": p.index, "key": p.key_id}}),
                );
            }
        }
        for d in tr.devices.iter().flat_map(|r| r.lock().unwrap().clone()) {
            ev.push(json!({"ph": "X", "pid": 2, "tid": d.device, "name": format!("job {} part {}", d.job, d.index),
                "cat": "device", "ts": tr.us(d.start), "dur": tr.us(d.end) - tr.us(d.start)}));
        }
        json!({"traceEvents": ev, "displayTimeUnit": "ms"}).to_string()
    }

    /// The streamed export parses as JSON and is byte for byte the document built whole,
    /// also when written in small pieces; an empty tracer's export is valid too.
    #[test]
    fn the_streamed_export_is_the_whole_document_byte_for_byte() {
        let tr = Tracer::new(8, vec!["gpu0".into(), "gpu \"1\"".into()]);
        let t0 = Instant::now();
        assert_eq!(tr.chrome_json(), as_one_value(&tr));
        for job in 0..5 {
            let mut p = PartitionTrace::new(job, 1, format!("key-{job}"), t0);
            let ms = |n| t0 + Duration::from_millis(n);
            p.span(Stage::QueueWait, t0, ms(job + 1));
            p.span(Stage::Device, ms(job + 1), ms(job + 3));
            p.span(Stage::Tail, ms(job + 3), ms(job + 4));
            tr.record(p);
            tr.device_span((job % 2) as usize, job, 1, ms(job + 1), ms(job + 3));
        }
        let whole = as_one_value(&tr);
        assert_eq!(tr.chrome_json(), whole);
        /// A writer that takes at most 7 bytes a call.
        struct Trickle(Vec<u8>);
        impl Write for Trickle {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                let n = b.len().min(7);
                self.0.extend_from_slice(&b[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut t = Trickle(Vec::new());
        tr.write_chrome_json(&mut t).unwrap();
        assert_eq!(String::from_utf8(t.0).unwrap(), whole);
        let v: Value = serde_json::from_str(&whole).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev.iter().filter(|e| e["ph"] == "X").count(), 5 * 3 + 5);
        assert_eq!(ev.iter().filter(|e| e["ph"] == "M").count(), 2 + 2 + 5);
    }
}
