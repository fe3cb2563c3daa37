//! The units of the configuration file: sizes ("512MiB", "auto") and durations ("30s").

use serde::Deserialize;
use std::time::Duration;

/// A size: a number of bytes, or a string like "512MiB", "8GiB", "auto".
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum Size {
    Bytes(u64),
    Text(String),
}

/// Parses "123", "64KiB", "512MiB", "8GiB", "1TiB" (also KB/MB/GB as powers of 1000).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("size {s:?} is not <number>[unit]"))?;
    let mul: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "size {s:?}: unknown unit {u:?} (B, KiB, MiB, GiB, TiB, KB, MB, GB)"
            ))
        }
    };
    n.checked_mul(mul)
        .ok_or_else(|| format!("size {s:?} overflows"))
}

/// Parses "250ms", "30s", "10m", "2h".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("duration {s:?} is not <number><unit>"))?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("duration {s:?} needs a unit: ms, s, m or h")),
    })
}

pub(super) fn size_or_auto(v: &Option<Size>, auto: Option<u64>) -> Result<Option<u64>, String> {
    match v {
        None => Ok(auto),
        Some(Size::Bytes(b)) => Ok(Some(*b)),
        Some(Size::Text(t)) if t == "auto" => Ok(auto),
        Some(Size::Text(t)) => parse_size(t).map(Some),
    }
}
