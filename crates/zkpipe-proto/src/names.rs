//! Priorities and job states as text: the lower-case names users type (`--priority high`)
//! and read (`job 7: queued`). The one place the protocol's values get names; the daemon
//! maps the same values to its engine's types (`zkpipe-server`'s `protocol` module) and
//! checks there that the names agree with the engine's.

use crate::pb::{JobState, Priority};

/// A priority name that is not one of low, normal, high and critical.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("priority {0:?} is not low, normal, high or critical")]
pub struct UnknownPriority(pub String);

impl Priority {
    /// The lower-case name; unspecified reads as normal, as the protocol defines it.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Unspecified | Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

impl std::str::FromStr for Priority {
    type Err = UnknownPriority;

    /// A priority from its name, in any case.
    fn from_str(s: &str) -> Result<Self, UnknownPriority> {
        match s.to_ascii_lowercase().as_str() {
            "low" => Ok(Priority::Low),
            "normal" => Ok(Priority::Normal),
            "high" => Ok(Priority::High),
            "critical" => Ok(Priority::Critical),
            _ => Err(UnknownPriority(s.to_string())),
        }
    }
}

impl JobState {
    /// The lower-case name; `unknown` for unspecified, which a daemon never sends.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Unspecified => "unknown",
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Whether a job in this state will not change any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

/// The name of a message's `state` field; `unknown` for a value this protocol does not
/// define (a newer daemon's).
pub fn state_name(state: i32) -> &'static str {
    JobState::try_from(state).map_or("unknown", JobState::name)
}

/// The name of a message's `priority` field; `unknown` for a value this protocol does not
/// define.
pub fn priority_name(priority: i32) -> &'static str {
    Priority::try_from(priority).map_or("unknown", Priority::name)
}

/// Whether a message's `state` field says the job will not change any more (an unknown
/// value does not).
pub fn is_final(state: i32) -> bool {
    JobState::try_from(state).is_ok_and(JobState::is_final)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_priority_reads_back_from_its_name() {
        for p in [
            Priority::Low,
            Priority::Normal,
            Priority::High,
            Priority::Critical,
        ] {
            assert_eq!(p.name().parse::<Priority>(), Ok(p));
            assert_eq!(p.name().to_uppercase().parse::<Priority>(), Ok(p));
            assert_eq!(priority_name(p as i32), p.name());
        }
        assert_eq!(priority_name(Priority::Unspecified as i32), "normal");
        assert_eq!(priority_name(99), "unknown");
        assert_eq!(
            "urgent".parse::<Priority>().unwrap_err().to_string(),
            "priority \"urgent\" is not low, normal, high or critical"
        );
    }

    #[test]
    fn states_have_names_and_three_are_final() {
        let names: Vec<_> = (0..=6).map(state_name).collect();
        assert_eq!(
            names,
            [
                "unknown",
                "queued",
                "running",
                "done",
                "failed",
                "cancelled",
                "unknown"
            ]
        );
        let finals: Vec<_> = (0..=6).filter(|&s| is_final(s)).map(state_name).collect();
        assert_eq!(finals, ["done", "failed", "cancelled"]);
    }
}
