//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/*`), the inputs of fixed
//! crashes (`fuzz/regressions/<target>/*`) and the seeds through the same bodies the
//! libFuzzer targets run: any panic fails the test. Well under a second in a release
//! build; the fuzzing itself is `scripts/fuzz.sh` (nightly).

use std::path::{Path, PathBuf};
use zkpipe_fuzz::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `body` on `input`, naming the input if it panics.
fn replay(target: &str, name: &str, body: zkpipe_fuzz::Body, input: &[u8]) {
    let r = std::panic::catch_unwind(|| body(input));
    assert!(r.is_ok(), "fuzz target {target} panics on {name}");
}

#[test]
fn every_target_has_a_harness_and_a_corpus() {
    for (name, _) in TARGETS {
        let harness = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&harness)
            .unwrap_or_else(|e| panic!("{}: {e}", harness.display()));
        assert!(
            text.contains(&format!("zkpipe_fuzz::{name}(data)")),
            "{} must call zkpipe_fuzz::{name}(data)",
            harness.display()
        );
        let corpus = fuzz_dir().join("corpus").join(name);
        assert!(corpus.is_dir(), "{} is missing", corpus.display());
    }
    let harnesses = std::fs::read_dir(fuzz_dir().join("fuzz_targets")).unwrap();
    for h in harnesses {
        let file = h.unwrap().file_name().to_string_lossy().into_owned();
        let stem = file.trim_end_matches(".rs");
        assert!(
            TARGETS.iter().any(|(n, _)| *n == stem),
            "fuzz/fuzz_targets/{file} is not in zkpipe_fuzz::TARGETS"
        );
    }
}

#[test]
fn corpus_replays_without_panics() {
    let mut total = 0;
    for (name, body) in TARGETS {
        for set in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz_dir().join(set).join(name)) else {
                continue;
            };
            for e in entries {
                let path = e.unwrap().path();
                let input = std::fs::read(&path).unwrap();
                replay(name, &path.display().to_string(), *body, &input);
                total += 1;
            }
        }
    }
    assert!(total > 0, "no corpus under {}", fuzz_dir().display());
}

#[test]
fn seeds_replay_without_panics() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let seeds = zkpipe_fuzz::seeds::seeds(Some(&fixtures)).unwrap();
    for (name, _) in TARGETS {
        assert!(
            seeds.iter().any(|s| s.target == *name),
            "no seed for target {name}"
        );
    }
    for s in seeds {
        let body = TARGETS.iter().find(|(n, _)| *n == s.target).unwrap().1;
        replay(s.target, &s.name, body, &s.bytes);
    }
}
