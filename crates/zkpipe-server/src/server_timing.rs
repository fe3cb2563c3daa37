//! Where a call's time went on the daemon, sent back with its reply as the `server-timing`
//! metadata entry in the W3C Server-Timing syntax (`receive;dur=0.41, accept;dur=6.80`,
//! milliseconds). A client subtracts the parts from its own latency to see what the
//! daemon did not spend: the request's send before its headers arrived, the reply's
//! return, the client's own scheduling.
//!
//! Parts, in order (a call has those that apply):
//! - `receive`: headers arrived → handler started: the body's transfer, its decoding, the
//!   token check;
//! - `accept`: the witnesses checked and the job committed to the job store;
//! - `prove`: accepted (or, for AwaitProof, the call began) → the job ended on this daemon;
//! - `wake`: the job ended → the waiting call resumed;
//! - `wait`: a wait whose end this daemon did not see (a fleet's job): `prove` + `wake`.
// tonic's `Status` is an interceptor's error type; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use std::time::{Duration, Instant};
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::Status;

/// The metadata key.
pub const KEY: &str = "server-timing";

/// When a call's headers arrived (request extension, set by [`StampArrival`]).
#[derive(Debug, Clone, Copy)]
struct Arrived(Instant);

/// An interceptor that stamps each call's arrival, then runs `I`. Interceptors run once
/// the headers are in, before the body is read.
#[derive(Clone, Debug)]
pub struct StampArrival<I>(pub I);

impl<I: Interceptor> Interceptor for StampArrival<I> {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        req.extensions_mut().insert(Arrived(Instant::now()));
        self.0.call(req)
    }
}

/// A call's parts so far; each ends where the next begins.
#[derive(Debug)]
pub struct Phases {
    last: Instant,
    parts: Vec<(&'static str, Duration)>,
}

impl Phases {
    /// Starts at the handler: `receive` is the time since the call's headers arrived
    /// (left out when they were not stamped).
    pub fn start<T>(req: &tonic::Request<T>) -> Self {
        let now = Instant::now();
        let parts = match req.extensions().get::<Arrived>() {
            Some(a) => vec![("receive", now.saturating_duration_since(a.0))],
            None => Vec::new(),
        };
        Self { last: now, parts }
    }

    /// Ends part `name` now.
    pub fn end(&mut self, name: &'static str) {
        self.end_at(name, Instant::now());
    }

    /// Ends part `name` at `at` (clamped to the part's start).
    pub fn end_at(&mut self, name: &'static str, at: Instant) {
        let at = at.max(self.last);
        self.parts.push((name, at - self.last));
        self.last = at;
    }

    /// Ends a wait for a job that ended at `finished` (if this daemon saw it): `ended`
    /// up to then and `wake` after it, else one `wait`.
    pub fn end_wait(&mut self, ended: &'static str, finished: Option<Instant>) {
        match finished {
            Some(f) => {
                self.end_at(ended, f);
                self.end("wake");
            }
            None => self.end("wait"),
        }
    }

    /// The header value.
    pub fn header(&self) -> String {
        self.parts
            .iter()
            .map(|(n, d)| format!("{n};dur={:.3}", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Puts the parts on `response`.
    pub fn attach<T>(&self, response: &mut tonic::Response<T>) {
        // The value is ASCII by construction; a failure would only drop the timings.
        if let Ok(v) = MetadataValue::try_from(self.header()) {
            response.metadata_mut().insert(KEY, v);
        }
    }
}

/// The parts of a `server-timing` value: (name, milliseconds), in order. Entries without
/// a `dur` are left out.
pub fn parse(value: &str) -> Vec<(String, f64)> {
    value
        .split(',')
        .filter_map(|entry| {
            let mut fields = entry.split(';').map(str::trim);
            let name = fields.next().filter(|n| !n.is_empty())?;
            let dur = fields.find_map(|f| f.strip_prefix("dur="))?.parse().ok()?;
            Some((name.to_string(), dur))
        })
        .collect()
}

/// The parts a reply carries, if any.
pub fn of_response<T>(response: &tonic::Response<T>) -> Vec<(String, f64)> {
    response
        .metadata()
        .get(KEY)
        .and_then(|v| v.to_str().ok())
        .map(parse)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_follow_one_another_and_read_back() {
        let mut req = tonic::Request::new(());
        let arrived = Instant::now();
        req.extensions_mut().insert(Arrived(arrived));
        let mut p = Phases::start(&req);
        let t0 = p.last;
        p.end_at("accept", t0 + Duration::from_millis(7));
        p.end_wait("prove", Some(t0 + Duration::from_millis(27)));
        let parts = parse(&p.header());
        let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["receive", "accept", "prove", "wake"]);
        assert!((parts[1].1 - 7.0).abs() < 1e-9, "{parts:?}");
        assert!((parts[2].1 - 20.0).abs() < 1e-9, "{parts:?}");
        assert!(parts[0].1 >= 0.0 && parts[3].1 >= 0.0);
        // A job that ended before the wait began wakes at once: no negative part.
        let mut q = Phases::start(&tonic::Request::new(()));
        q.end_wait("prove", Some(arrived));
        let parts = parse(&q.header());
        assert_eq!(parts[0], ("prove".to_string(), 0.0));
        assert_eq!(parts.len(), 2, "no receive without a stamp: {parts:?}");
    }

    #[test]
    fn a_wait_it_did_not_see_end_is_one_part() {
        let mut p = Phases::start(&tonic::Request::new(()));
        p.end_wait("prove", None);
        let parts = parse(&p.header());
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].0, "wait");
    }

    #[test]
    fn foreign_values_parse_as_far_as_they_go() {
        assert_eq!(
            parse("db;dur=53, cache;desc=\"Cache Read\";dur=23.2, app, ;dur=1, x;dur=abc"),
            [("db".to_string(), 53.0), ("cache".to_string(), 23.2)]
        );
        assert!(parse("").is_empty());
    }

    #[test]
    fn the_interceptor_stamps_then_runs_the_inner_one() {
        let refuse = |_req: tonic::Request<()>| -> Result<tonic::Request<()>, Status> {
            Err(Status::unauthenticated("no"))
        };
        assert!(StampArrival(refuse).call(tonic::Request::new(())).is_err());
        let pass = |req: tonic::Request<()>| -> Result<tonic::Request<()>, Status> { Ok(req) };
        let req = StampArrival(pass).call(tonic::Request::new(())).unwrap();
        assert!(req.extensions().get::<Arrived>().is_some());
    }
}
