//! The engine end to end on the CPU with the committed fixtures: mixed keys and curves,
//! priorities, partitions, cancellation, idempotency, bad input, and a budget that fits
//! one job at a time. Every proof is verified against the key's verification key.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use zkpipe_core::device::{BindOptions, Devices, KeyShape};
use zkpipe_core::{Bn254, PointChecks};
use zkpipe_core::{CompiledKey, CpuDevices};
use zkpipe_engine::{
    Engine, EngineConfig, EngineError, JobState, Priority, Residency, StageConfig, SubmitRequest,
};
use zkpipe_formats::zkey::ZkeyFile;

use crate::support::*;

/// The scheduling switches (issue 16) change where work runs, never what it computes:
/// a shared pool, the gate kept through the tail, and the throttle in both modes.
#[test]
fn every_scheduling_switch_proves_correctly() {
    use zkpipe_core::throttle::Mode;
    use zkpipe_engine::config::{PoolMode, ThrottleConfig};
    let dir = key_dir();
    for (pools, release_before_tail, mode) in [
        (PoolMode::Shared, false, Mode::Pause),
        (PoolMode::PerStage, false, Mode::Yield),
        (PoolMode::Shared, true, Mode::Off),
    ] {
        let cfg = EngineConfig {
            pools,
            release_before_tail,
            throttle: ThrottleConfig {
                mode,
                every: 1,
                max_pause: Duration::from_millis(1),
            },
            ..config(dir.path())
        };
        let engine = Engine::start(cfg, Arc::new(CpuDevices::default())).unwrap();
        let jobs: Vec<u64> = KEYS
            .iter()
            .map(|(id, ..)| {
                engine
                    .submit(request(id, 2, Priority::Normal))
                    .unwrap()
                    .job_id
            })
            .collect();
        for j in jobs {
            check_job(&engine, dir.path(), j);
        }
        assert_eq!(settled(&engine).pending_partitions, 0);
        let m = engine.metrics_text();
        if mode == Mode::Pause {
            // The CPU MSMs raised bursts (the counters are this engine's totals).
            assert!(
                metric(&m, "zkpipe_throttle_events{event=\"burst\"}") > 0.0,
                "{m}"
            );
        }
        let st = engine.status().pool;
        assert_eq!(
            metric(&m, "zkpipe_buffer_pool_buffers{fate=\"allocated\"}"),
            st.allocated as f64
        );
        assert!(m.contains("zkpipe_throttle_paused_seconds "), "{m}");
        assert!(
            m.contains("zkpipe_dealloc_threads{state=\"live\"} 0"),
            "{m}"
        );
        engine.shutdown();
    }
}

/// The value of the metric line that starts with `name` (name and labels), from `/metrics` text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no metric {name} in\n{text}"))
}

#[test]
fn mixed_concurrent_jobs_all_verify_and_memory_returns_to_the_keys() {
    let dir = key_dir();
    let engine = Engine::start(config(dir.path()), Arc::new(CpuDevices::default())).unwrap();
    let prios = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];
    let mut jobs = Vec::new();
    for i in 0..12 {
        let id = KEYS[i % 4].0;
        let s = engine.submit(request(id, 1 + i % 3, prios[i % 4])).unwrap();
        assert!(!s.existing);
        jobs.push(s.job_id);
    }
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let st = settled(&engine);
    let resident: u64 = st
        .keys
        .iter()
        .filter(|k| k.residency == Residency::Hot)
        .map(|k| k.meta.host_bytes)
        .sum();
    assert_eq!(st.keys.len(), 4);
    assert!(st.keys.iter().all(|k| k.refs == 0));
    assert_eq!(st.memory_used, resident, "only resident keys hold memory");
    assert_eq!(st.pending_partitions, 0);
    assert!(st.pool.recycled > 0, "buffers are recycled");
    let trace: serde_json::Value = serde_json::from_str(&engine.trace_json()).unwrap();
    assert!(trace["traceEvents"].as_array().unwrap().len() > 24);
    let m = engine.metrics_text();
    assert!(m.contains("zkpipe_proofs_completed_total 24"), "{m}");
    // Evict an idle key; it becomes cold and is loaded again on demand.
    assert!(engine.evict("bn254-multi").unwrap());
    let s = engine
        .submit(request("bn254-multi", 1, Priority::Normal))
        .unwrap();
    check_job(&engine, dir.path(), s.job_id);
    engine.shutdown();
}

#[test]
fn cancel_idempotency_and_bad_input() {
    let dir = key_dir();
    let engine = Engine::start(config(dir.path()), Arc::new(CpuDevices::default())).unwrap();
    // Idempotency: the same request id gives the same job.
    let mut r = request("bn254-poseidon", 2, Priority::Normal);
    r.request_id = "req-1".into();
    let a = engine.submit(r.clone()).unwrap();
    let b = engine.submit(r).unwrap();
    assert_eq!(a.job_id, b.job_id);
    assert!(b.existing && !a.existing);
    // Cancel: many queued low-priority jobs, cancel the last one.
    let many: Vec<u64> = (0..6)
        .map(|_| {
            engine
                .submit(request("bls-poseidon", 2, Priority::Low))
                .unwrap()
                .job_id
        })
        .collect();
    let victim = *many.last().unwrap();
    engine.cancel(victim).unwrap();
    assert_eq!(
        engine.job_status(victim).unwrap().state,
        JobState::Cancelled
    );
    check_job(&engine, dir.path(), a.job_id);
    for &j in &many[..5] {
        check_job(&engine, dir.path(), j);
    }
    // Cancel of a finished job and of an unknown one.
    assert!(matches!(
        engine.cancel(a.job_id),
        Err(EngineError::AlreadyFinished { .. })
    ));
    assert!(matches!(
        engine.cancel(9999),
        Err(EngineError::UnknownJob(9999))
    ));
    // Bad input, each refused at submit.
    let err = |r: SubmitRequest| engine.submit(r).unwrap_err();
    assert!(matches!(
        err(request("bn254-poseidon", 0, Priority::Normal)),
        EngineError::InvalidRequest(_)
    ));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.key_id = "nope".into();
    assert!(matches!(err(r.clone()), EngineError::UnknownKey(_)));
    r.key_id = "../bn254/poseidon/circuit".into();
    assert!(matches!(err(r), EngineError::InvalidKeyId(_)));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.witnesses = vec![b"wtns but not really".to_vec()];
    assert!(matches!(err(r), EngineError::MalformedWitness { .. }));
    // A job's partitions are parsed side by side; the first bad one in partition order
    // is named, whichever finished first.
    let mut r = request("bn254-poseidon", 4, Priority::Normal);
    r.witnesses[1] = b"wtns but not really".to_vec();
    r.witnesses[3] = witness("bls-poseidon");
    assert!(matches!(
        err(r),
        EngineError::MalformedWitness { partition: 1, .. }
    ));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.witnesses = vec![witness("bls-poseidon")];
    assert!(matches!(err(r), EngineError::WrongCurve { .. }));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.witnesses = vec![witness("bn254-multi")];
    assert!(matches!(err(r), EngineError::WitnessMismatch { .. }));
    // A witness that does not satisfy the circuit fails its job, with a message.
    let mut r = request("bn254-multi", 2, Priority::Normal);
    r.witnesses[1] = std::fs::read(fixture("bn254", "multi_public", "bad_witness.wtns")).unwrap();
    let bad = engine.submit(r).unwrap();
    let s = engine.wait(bad.job_id, Duration::from_secs(120)).unwrap();
    assert_eq!(s.state, JobState::Failed);
    assert!(s.error.unwrap().contains("does not satisfy"));
    // Still serving.
    let ok = engine
        .submit(request("bls-multi", 1, Priority::High))
        .unwrap();
    check_job(&engine, dir.path(), ok.job_id);
    let st = settled(&engine);
    assert_eq!(st.pending_partitions, 0);
    assert!(st.keys.iter().all(|k| k.refs == 0));
    engine.shutdown();
}

/// What the engine says of key `id` in `dir` (sizes, memory), from a probe engine.
fn key_meta(dir: &Path, id: &str) -> zkpipe_engine::KeyMeta {
    key_meta_on(dir, id, Arc::new(CpuDevices::default()))
}

/// [`key_meta`] as an engine with `factory` sees it.
fn key_meta_on(dir: &Path, id: &str, devices: Arc<dyn Devices>) -> zkpipe_engine::KeyMeta {
    let probe = Engine::start(config(dir), devices).unwrap();
    let keys = probe.status().keys;
    probe.shutdown();
    keys.into_iter().find(|k| k.meta.id == id).unwrap().meta
}

#[test]
fn a_budget_for_one_job_at_a_time_still_completes_every_job() {
    let dir = key_dir();
    // Probe the sizes, then give the engine room for one key and one partition only.
    let meta = key_meta(dir.path(), "bls-poseidon");
    let mut cfg = config(dir.path());
    cfg.memory_limit = meta.host_bytes + meta.partition_bytes + 1024;
    let engine = Engine::start(cfg, Arc::new(CpuDevices::default())).unwrap();
    // A job that can never fit is refused at once.
    let mut big = config(dir.path());
    big.memory_limit = meta.host_bytes;
    let tiny = Engine::start(big, Arc::new(CpuDevices::default())).unwrap();
    assert!(matches!(
        tiny.submit(request("bls-poseidon", 1, Priority::Normal)),
        Err(EngineError::TooLarge { .. })
    ));
    tiny.shutdown();
    let ids = ["bls-poseidon", "bn254-poseidon", "bls-multi", "bn254-multi"];
    let jobs: Vec<u64> = (0..20)
        .map(|i| {
            engine
                .submit(request(ids[i % 4], 1, Priority::Normal))
                .unwrap()
                .job_id
        })
        .collect();
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let st = engine.status();
    assert!(st.memory_used <= st.memory_limit);
    engine.shutdown();
}

/// Two CPU "devices" with device-memory budgets, to exercise placement and device admission.
fn two_devices() -> TestDevices {
    TestDevices {
        name: "fake",
        count: 2,
        memory: Some(64 << 20),
        ..TestDevices::default()
    }
}

#[test]
fn a_device_memory_limit_is_never_more_than_the_device_has() {
    let dir = key_dir();
    let has = 64 << 20;
    for (limit, budget) in [(None, has), (Some(has / 2), has / 2), (Some(4 * has), has)] {
        let cfg = EngineConfig {
            device_memory_limit: limit,
            ..config(dir.path())
        };
        let engine = Engine::start(cfg, Arc::new(two_devices())).unwrap();
        let st = engine.status();
        assert!(
            st.devices.iter().all(|d| d.memory_total == Some(budget)),
            "limit {limit:?}: {:?}",
            st.devices
        );
        engine.shutdown();
    }
}

#[test]
fn keys_are_placed_across_devices_and_device_memory_is_accounted() {
    let dir = key_dir();
    let one_device_per_key = EngineConfig {
        key_max_devices: 1,
        ..config(dir.path())
    };
    let engine = Engine::start(one_device_per_key, Arc::new(two_devices())).unwrap();
    let jobs: Vec<u64> = (0..8)
        .map(|i| {
            engine
                .submit(request(KEYS[i % 4].0, 2, Priority::Normal))
                .unwrap()
                .job_id
        })
        .collect();
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let st = engine.status();
    assert_eq!(st.devices.len(), 2);
    assert!(st.devices.iter().all(|d| d.keys == 2), "{:?}", st.devices);
    for (i, d) in st.devices.iter().enumerate() {
        let resident: u64 = st
            .keys
            .iter()
            .filter(|k| k.devices == [i])
            .map(|k| two_devices().key_device_bytes(&k.meta.shape, &k.meta.bind))
            .sum();
        assert_eq!(
            d.memory_reserved, resident,
            "only resident key copies remain"
        );
    }
    assert!(engine.evict("bls-multi").unwrap());
    let st = engine.status();
    let total: u64 = st.devices.iter().map(|d| d.memory_reserved).sum();
    let resident: u64 = st
        .keys
        .iter()
        .filter(|k| k.residency == Residency::Hot)
        .map(|k| test_device_bytes(&k.meta.shape).0)
        .sum();
    assert_eq!(total, resident, "eviction frees the device copy too");
    engine.shutdown();
}

/// One busy key spreads over both devices (a copy on each), unless limited to one.
#[test]
fn a_busy_key_is_copied_to_a_less_loaded_device_up_to_max_devices() {
    let dir = key_dir();
    for (max_devices, expect) in [(usize::MAX, vec![0usize, 1]), (1, vec![0])] {
        let cfg = EngineConfig {
            key_max_devices: max_devices,
            ..config(dir.path())
        };
        let slow = TestDevices {
            pass_delay: Duration::from_millis(30),
            ..two_devices()
        };
        let engine = Engine::start(cfg, Arc::new(slow.clone())).unwrap();
        let job = engine
            .submit(request("bn254-poseidon", 12, Priority::Normal))
            .unwrap()
            .job_id;
        check_job(&engine, dir.path(), job);
        let st = engine.status();
        let key = st
            .keys
            .iter()
            .find(|k| k.meta.id == "bn254-poseidon")
            .unwrap();
        let mut devices = key.devices.clone();
        devices.sort();
        assert_eq!(devices, expect, "max_devices {max_devices}");
        let busy: Vec<bool> = st.devices.iter().map(|d| d.busy_fraction > 0.0).collect();
        assert_eq!(busy, [true, expect.len() == 2], "which devices worked");
        for (i, d) in st.devices.iter().enumerate() {
            let copies = u64::from(devices.contains(&i));
            assert_eq!(
                d.memory_reserved,
                copies * slow.key_device_bytes(&key.meta.shape, &key.meta.bind),
                "device {i} holds one copy of the key if it is placed there"
            );
        }
        engine.shutdown();
    }
}

/// Two held-capable devices of one pass each, served by one worker each: a partition
/// popped from a device's queue is in its pass, so what is queued stays queued while the
/// device is held.
fn one_pass_each(dir: &Path, batch_limit: usize) -> (Engine, TestDevices) {
    let devices = TestDevices {
        batch_limit,
        ..two_devices()
    };
    let cfg = EngineConfig {
        device: StageConfig {
            workers: 1,
            threads: 2,
        },
        device_passes: Some(1),
        queue_depth: 8,
        ..config(dir)
    };
    (
        Engine::start(cfg, Arc::new(devices.clone())).unwrap(),
        devices,
    )
}

/// Waits (up to a minute) until `ready` holds.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// With one partition of a key in a pass on device 0 and nothing queued, the next
/// partition goes to a copy of the key on the idle device 1: it is proved there while
/// device 0 is still held, so the copy was made before device 0 had a queue.
#[test]
fn a_key_with_a_pass_running_is_copied_to_an_idle_device_before_it_queues() {
    let dir = key_dir();
    let (engine, devices) = one_pass_each(dir.path(), 1);
    devices.holds.hold(0);
    let first = submit_many(&engine, "bn254-poseidon", 1)[0];
    wait_until("a pass on device 0", || devices.log.on(0) == [1]);
    let second = submit_many(&engine, "bn254-poseidon", 1)[0];
    check_job(&engine, dir.path(), second);
    assert_eq!(
        devices.log.on(1),
        [1],
        "the second partition went to device 1"
    );
    devices.holds.release(0);
    check_job(&engine, dir.path(), first);
    let st = engine.status();
    let key = st
        .keys
        .iter()
        .find(|k| k.meta.id == "bn254-poseidon")
        .unwrap();
    assert_eq!(key.devices, [0, 1]);
    assert!(st.devices.iter().all(|d| d.keys == 1), "{:?}", st.devices);
    engine.shutdown();
}

/// Both devices held with a pass each, eight partitions of one key are routed four to
/// each queue. Device 0, released, takes its four in one pass, then device 1's four in
/// another: an idle device takes queued work of a key held elsewhere, in full batches,
/// while device 1 is still busy.
#[test]
fn an_idle_device_takes_full_batches_queued_for_a_busy_one() {
    let dir = key_dir();
    let (engine, devices) = one_pass_each(dir.path(), 4);
    devices.holds.hold(0);
    devices.holds.hold(1);
    let first = submit_many(&engine, "bn254-poseidon", 1);
    wait_until("a pass on device 0", || devices.log.on(0) == [1]);
    let second = submit_many(&engine, "bn254-poseidon", 1);
    wait_until("a pass on device 1", || devices.log.on(1) == [1]);
    let queued = submit_many(&engine, "bn254-poseidon", 8);
    wait_until("8 partitions queued for the devices", || {
        engine.status().queues.device == [4, 4]
    });
    devices.holds.release(0);
    for j in queued {
        check_job(&engine, dir.path(), j);
    }
    assert_eq!(
        devices.log.on(0),
        [1, 4, 4],
        "device 0: its own batch, then device 1's"
    );
    assert_eq!(
        devices.log.on(1),
        [1],
        "device 1 is still in its first pass"
    );
    devices.holds.release(1);
    for j in first.into_iter().chain(second) {
        check_job(&engine, dir.path(), j);
    }
    let (count, sum) = {
        let text = engine.metrics_text();
        let v = |name: &str| metric(&text, &format!("{name}{{device=\"fake0\"}}"));
        (
            v("zkpipe_device_batch_size_count"),
            v("zkpipe_device_batch_size_sum"),
        )
    };
    assert_eq!(
        (count, sum),
        (3.0, 9.0),
        "device 0's passes in its histogram"
    );
    engine.shutdown();
}

/// A preloaded key is bound to every device with room for it, so the first jobs find it
/// hot wherever they are routed; with `key_max_devices = 1`, to one device only.
#[test]
fn a_preloaded_key_is_bound_to_every_device_with_room() {
    let dir = key_dir();
    for (max_devices, expect) in [(usize::MAX, vec![0usize, 1]), (1, vec![0])] {
        let cfg = EngineConfig {
            key_max_devices: max_devices,
            ..config(dir.path())
        };
        let devices = two_devices();
        let engine = Engine::start(cfg, Arc::new(devices.clone())).unwrap();
        engine
            .preload("bn254-poseidon", Duration::from_secs(60))
            .unwrap();
        let st = engine.status();
        let key = st
            .keys
            .iter()
            .find(|k| k.meta.id == "bn254-poseidon")
            .unwrap();
        assert_eq!(key.devices, expect, "max_devices {max_devices}");
        assert_eq!(key.residency, Residency::Hot);
        let copy = devices.key_device_bytes(&key.meta.shape, &key.meta.bind);
        for (i, d) in st.devices.iter().enumerate() {
            let copies = u64::from(expect.contains(&i));
            assert_eq!(d.memory_reserved, copies * copy, "device {i}");
        }
        engine.shutdown();
    }
}

/// `device_split = 2` over the CPU: two devices, "cpu.0" and "cpu.1", both proving the
/// key; with every pass stubbed by a fixed delay (a witness seen before gets its sums
/// back), every proof still verifies.
#[test]
fn a_split_cpu_is_two_devices_and_stubbed_passes_still_verify() {
    let dir = key_dir();
    let cfg = EngineConfig {
        device_split: 2,
        device_stub: Some(Duration::from_millis(30)),
        ..config(dir.path())
    };
    let engine = Engine::start(cfg, Arc::new(CpuDevices::default())).unwrap();
    prove_many(&engine, dir.path(), "bn254-poseidon", 8);
    prove_many(&engine, dir.path(), "bls-poseidon", 2);
    let st = engine.status();
    let names: Vec<&str> = st.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["cpu.0", "cpu.1"]);
    assert!(
        st.devices.iter().all(|d| d.busy_fraction > 0.0),
        "{:?}",
        st.devices
    );
    let key = st
        .keys
        .iter()
        .find(|k| k.meta.id == "bn254-poseidon")
        .unwrap();
    assert_eq!(key.devices.len(), 2, "{:?}", key.devices);
    assert!(engine.config().validate().is_ok());
    let bad = EngineConfig {
        device_split: 0,
        ..config(dir.path())
    };
    assert!(bad.validate().unwrap_err().contains("split"));
    engine.shutdown();
}

/// An engine with `cfg` over one device batching up to 4 proofs, and the log of what it
/// was asked.
fn batching_engine(
    cfg: EngineConfig,
    memory: Option<u64>,
    reduces: bool,
) -> (Engine, Arc<PassLog>) {
    let devices = batching_devices(memory, reduces);
    let log = Arc::clone(&devices.log);
    (Engine::start(cfg, Arc::new(devices)).unwrap(), log)
}

/// One device batching up to 4 proofs, each pass taking 20 ms longer.
fn batching_devices(memory: Option<u64>, reduces: bool) -> TestDevices {
    TestDevices {
        name: "batching",
        memory,
        batch_limit: 4,
        pass_delay: Duration::from_millis(20),
        reduces,
        ..TestDevices::default()
    }
}

/// Submits `n` single-partition jobs of `id` at once; their ids.
fn submit_many(engine: &Engine, id: &str, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            engine
                .submit(request(id, 1, Priority::Normal))
                .unwrap()
                .job_id
        })
        .collect()
}

/// Submits `n` single-partition jobs of `id` at once and checks every proof.
fn prove_many(engine: &Engine, dir: &Path, id: &str, n: usize) {
    for j in submit_many(engine, id, n) {
        check_job(engine, dir, j);
    }
}

/// (count, sum) of `zkpipe_device_batch_size` on device "batching0".
fn batch_size_metric(engine: &Engine) -> (f64, f64) {
    let text = engine.metrics_text();
    let value = |name: &str| -> f64 {
        let prefix = format!("{name}{{device=\"batching0\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .parse()
            .unwrap()
    };
    (
        value("zkpipe_device_batch_size_count"),
        value("zkpipe_device_batch_size_sum"),
    )
}

/// Proofs of one key queued for a device that batches share passes, never more than the
/// backend's limit, and every proof verifies.
#[test]
fn queued_proofs_of_one_key_share_device_passes_up_to_the_backend_limit() {
    let dir = key_dir();
    let (engine, log) = batching_engine(config(dir.path()), None, false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 24);
    let batches = log.batches();
    assert!(
        batches.iter().any(|&n| n > 1),
        "some passes batch: {batches:?}"
    );
    assert!(batches.iter().all(|&n| (2..=4).contains(&n)), "{batches:?}");
    let partitions = batches.iter().sum::<usize>() + log.singles();
    assert_eq!(partitions, 24, "every partition had exactly one pass");
    let (count, sum) = batch_size_metric(&engine);
    assert_eq!(count as usize, batches.len() + log.singles());
    assert_eq!(sum as usize, 24);
    let st = settled(&engine);
    assert_eq!(st.pending_partitions, 0);
    assert!(st.keys.iter().all(|k| k.refs == 0));
    engine.shutdown();
}

/// Proofs leave a batching device together and the tail checks them together: a wrong
/// proof among them fails its job alone (its self-check), and every other job is done
/// with a proof that verifies.
#[test]
fn a_tail_batch_fails_only_the_proofs_whose_self_check_fails() {
    let dir = key_dir();
    let cfg = EngineConfig {
        // One tail worker, so that the proofs of a device batch queue for it together.
        tail: StageConfig {
            workers: 1,
            threads: 2,
        },
        tail_batch: 8,
        ..config(dir.path())
    };
    let devices = TestDevices {
        fail: Fault::Corrupt,
        ..batching_devices(None, false)
    };
    let engine = Engine::start(cfg, Arc::new(devices)).unwrap();
    let mut failed = 0;
    for j in submit_many(&engine, "bn254-poseidon", 12) {
        match outcome(&engine, j) {
            (JobState::Done, _) => check_job(&engine, dir.path(), j),
            (JobState::Failed, e) => {
                assert!(e.contains("failed its self-check"), "job {j}: {e}");
                failed += 1;
            }
            other => panic!("job {j}: {other:?}"),
        }
    }
    assert_eq!(failed, 4, "every third of 12 proofs was corrupted");
    let text = engine.metrics_text();
    let tail = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse()
            .unwrap()
    };
    assert_eq!(tail("zkpipe_tail_batch_size_sum"), 12.0);
    assert!(
        tail("zkpipe_tail_batch_size_count") < 12.0,
        "some tail batches held several proofs"
    );
    engine.shutdown();
}

/// A tail batch that leaves proofs queued behind it runs on its worker's thread alone; with
/// `tail_always_spread` every batch is spread over the pool. Every proof verifies both ways.
#[test]
fn a_tail_batch_runs_alone_while_others_wait_unless_always_spread() {
    let dir = key_dir();
    for always_spread in [false, true] {
        let cfg = EngineConfig {
            // One worker taking one proof at a time: a device batch of several leaves
            // the rest queued behind the first.
            tail: StageConfig {
                workers: 1,
                threads: 2,
            },
            tail_batch: 1,
            tail_always_spread: always_spread,
            ..config(dir.path())
        };
        let engine = Engine::start(cfg, Arc::new(batching_devices(None, false))).unwrap();
        prove_many(&engine, dir.path(), "bn254-poseidon", 12);
        let m = engine.metrics_text();
        let (alone, pool) = (
            metric(&m, "zkpipe_tail_batches_total{on=\"alone\"}"),
            metric(&m, "zkpipe_tail_batches_total{on=\"pool\"}"),
        );
        assert_eq!(alone + pool, 12.0, "{m}");
        if always_spread {
            assert_eq!(alone, 0.0, "{m}");
        } else {
            assert!(alone > 0.0, "no batch ran alone:\n{m}");
        }
        engine.shutdown();
    }
}

/// Two passes of a streamed key never run at once on a device, even with two passes a
/// device allowed (its plan's budget holds one batch, and on a GPU a pass waiting inside
/// the device's pool could be stolen by the running pass's own thread and block under its
/// lock); in-core keys' passes do overlap under the same load. Every proof verifies.
#[test]
fn a_streamed_keys_passes_run_one_at_a_time_on_a_device() {
    let dir = key_dir();
    for streamed in [true, false] {
        let cfg = EngineConfig {
            device_passes: Some(2),
            device_overlap_share: 0.0,
            ..config(dir.path())
        };
        let devices = TestDevices {
            streamed,
            batch_limit: 2,
            pass_delay: Duration::from_millis(30),
            ..TestDevices::default()
        };
        let log = Arc::clone(&devices.log);
        let engine = Engine::start(cfg, Arc::new(devices)).unwrap();
        prove_many(&engine, dir.path(), "bn254-poseidon", 12);
        let overlapping = log.overlapping.lock().unwrap().clone();
        assert_eq!(overlapping.is_empty(), streamed, "{overlapping:?}");
        let key = key_status(&engine, "bn254-poseidon");
        assert_eq!(
            key.paths[0].starts_with("streamed"),
            streamed,
            "{:?}",
            key.paths
        );
        engine.shutdown();
    }
}

/// With `device_overlap_share = 2`, a pass starts beside another only with twice that
/// pass's partitions (at most the limit of 4), else once it leaves: jobs that arrive one by
/// one during a pass never make a pass of one beside a pass of one. Every job ends with a
/// verified proof.
#[test]
fn a_pass_beside_another_starts_only_with_its_share_of_partitions() {
    let dir = key_dir();
    let cfg = EngineConfig {
        device_passes: Some(2),
        device_overlap_share: 2.0,
        ..config(dir.path())
    };
    let (engine, log) = batching_engine(cfg, None, false);
    // One by one, faster than a pass (20 ms), so that a second pass could start small.
    let jobs: Vec<u64> = (0..16)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(4));
            submit_many(&engine, "bn254-poseidon", 1)[0]
        })
        .collect();
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let overlapping = log.overlapping.lock().unwrap().clone();
    assert!(
        overlapping
            .iter()
            .all(|&(mine, theirs)| mine >= (2 * theirs).min(4)),
        "(a pass started beside another, that pass): {overlapping:?}"
    );
    let (_, sum) = batch_size_metric(&engine);
    assert_eq!(sum as usize, 16, "every partition had exactly one pass");
    // The wait for a share is `device_wait`, not part of the device span: no partition's
    // span ends before it starts, the partitions that queued during the wait included.
    let trace: serde_json::Value = serde_json::from_str(&engine.trace_json()).unwrap();
    let spans: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert!(spans.iter().any(|e| e["name"] == "device_wait"));
    let negative: Vec<_> = spans
        .iter()
        .filter(|e| e["dur"].as_f64().unwrap() < 0.0)
        .map(|e| (e["name"].clone(), e["dur"].clone()))
        .collect();
    assert!(
        negative.is_empty(),
        "spans ending before they start: {negative:?}"
    );
    engine.shutdown();
}

/// A device's queue holds a full batch even where `queue_depth` is smaller: with a depth
/// of 1, batches still grow past the 2 proofs (the worker's and the one queued) that such
/// a queue would allow.
#[test]
fn a_device_queue_holds_a_full_batch_whatever_the_queue_depth() {
    let dir = key_dir();
    let cfg = EngineConfig {
        queue_depth: 1,
        ..config(dir.path())
    };
    let (engine, log) = batching_engine(cfg, None, false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 24);
    let batches = log.batches();
    assert!(batches.iter().any(|&n| n > 2), "{batches:?}");
    assert!(batches.iter().all(|&n| n <= 4), "{batches:?}");
    engine.shutdown();
}

/// `device_batch = 1` turns batching off whatever the backend allows.
#[test]
fn a_device_batch_of_1_runs_every_partition_alone() {
    let dir = key_dir();
    let cfg = EngineConfig {
        device_batch: Some(1),
        ..config(dir.path())
    };
    let (engine, log) = batching_engine(cfg, None, false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 12);
    assert_eq!(log.batches(), Vec::<usize>::new());
    assert_eq!(log.singles(), 12);
    assert_eq!(batch_size_metric(&engine), (12.0, 12.0), "12 passes of 1");
    engine.shutdown();
}

/// A device budget with room for the key and three and a half partitions: the worker in
/// the gate takes what fits without waiting, so batches stay below the backend's limit of
/// 4, every job completes (no deadlock), and the partitions' device memory comes back.
#[test]
fn a_full_device_budget_makes_batches_smaller_instead_of_waiting() {
    let dir = key_dir();
    let meta = key_meta(dir.path(), "bn254-poseidon");
    let (key, part) = test_device_bytes(&meta.shape);
    let (engine, log) = batching_engine(config(dir.path()), Some(key + 3 * part + part / 2), false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 16);
    let batches = log.batches();
    assert!(
        batches.iter().any(|&n| n > 1),
        "some passes batch: {batches:?}"
    );
    assert!(
        batches.iter().all(|&n| n <= 3),
        "the budget caps: {batches:?}"
    );
    assert_eq!(batches.iter().sum::<usize>() + log.singles(), 16);
    let st = engine.status();
    assert_eq!(
        st.devices[0].memory_reserved, key,
        "only the key's resident copy remains"
    );
    engine.shutdown();
}

/// Where the device computes a, b, c from the witness (as the GPU backend does), the
/// reduce stage hands it w alone, singly and in batches, and every proof still verifies.
#[test]
fn a_device_that_reduces_gets_the_witness_alone_and_proofs_verify() {
    let dir = key_dir();
    let (engine, log) = batching_engine(config(dir.path()), None, true);
    prove_many(&engine, dir.path(), "bn254-poseidon", 12);
    prove_many(&engine, dir.path(), "bls-poseidon", 4);
    assert_eq!(
        log.reduced.load(std::sync::atomic::Ordering::SeqCst),
        16,
        "the device reduced every partition"
    );
    assert_eq!(log.batches().iter().sum::<usize>() + log.singles(), 16);
    engine.shutdown();
}

/// 1 GiB more host memory per partition.
const HUNGER: u64 = 1 << 30;

#[test]
fn devices_host_memory_counts_in_each_partition() {
    let dir = key_dir();
    let meta = key_meta(dir.path(), "bn254-poseidon");
    let hungry = TestDevices {
        hunger: HUNGER,
        ..TestDevices::default()
    };
    let seen = key_meta_on(dir.path(), "bn254-poseidon", Arc::new(hungry.clone()));
    assert_eq!(seen.partition_bytes, meta.partition_bytes + HUNGER);
    // A budget that fits the CPU backend's partition refuses the hungry one at once.
    let mut cfg = config(dir.path());
    cfg.memory_limit = meta.host_bytes + meta.partition_bytes + 1024;
    let tight = Engine::start(cfg, Arc::new(hungry)).unwrap();
    assert!(matches!(
        tight.submit(request("bn254-poseidon", 1, Priority::Normal)),
        Err(EngineError::TooLarge { .. })
    ));
    tight.shutdown();
}

/// A device that reduces in its pass and reads the witness's field elements (as a GPU
/// does) is charged per partition without a, b, c, the quotient's headroom and w's
/// scalars: the engine's host stages never make them for it.
#[test]
fn a_device_that_reduces_is_charged_no_domain_vectors() {
    let dir = key_dir();
    let meta = key_meta(dir.path(), "bn254-poseidon");
    let reducing = TestDevices {
        reduces: true,
        ..TestDevices::default()
    };
    let seen = key_meta_on(dir.path(), "bn254-poseidon", Arc::new(reducing));
    let (n, n_vars) = (meta.shape.domain_size as u64, meta.shape.n_vars as u64);
    assert_eq!(
        seen.partition_bytes,
        meta.partition_bytes - 32 * (4 * n + n_vars)
    );
}

/// `path` with the first point of zkey section 5 (A) overwritten by coordinates that are
/// not field elements: the header still reads, the key fails to load.
fn corrupt_points(path: &Path) {
    let mut b = std::fs::read(path).unwrap();
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut at = 12;
    for _ in 0..u32_at(&b, 8) {
        let id = u32_at(&b, at);
        let size = u64::from_le_bytes(b[at + 4..at + 12].try_into().unwrap()) as usize;
        if id == 5 {
            b[at + 12..at + 12 + 64].fill(0xff);
            std::fs::write(path, &b).unwrap();
            return;
        }
        at += 12 + size;
    }
    panic!("no section 5 in {}", path.display());
}

/// The job's final state and error.
fn outcome(engine: &Engine, job: u64) -> (JobState, String) {
    let s = engine.wait(job, Duration::from_secs(300)).unwrap();
    (s.state, s.error.unwrap_or_default())
}

/// After failures, nothing is held but the loaded keys (and their device copies), once the
/// failed jobs' other partitions have reached a stage boundary and been dropped. A job
/// fails (and stops counting as pending) with its first failed partition; another of its
/// partitions may still hold its key while a binding it waits on fails too.
fn assert_nothing_held(engine: &Engine) {
    let st = settled(engine);
    assert_eq!(st.pending_partitions, 0);
    assert!(st.keys.iter().all(|k| k.refs == 0), "{:?}", st.keys);
    let resident: u64 = st
        .keys
        .iter()
        .filter(|k| k.residency.is_loaded())
        .map(|k| k.meta.host_bytes)
        .sum();
    assert_eq!(
        st.memory_used, resident,
        "only loaded keys hold host memory"
    );
    for d in &st.devices {
        let copies: u64 = st
            .keys
            .iter()
            .filter(|k| k.residency.is_loaded())
            .filter(|k| k.devices.contains(&0))
            .map(|k| test_device_bytes(&k.meta.shape).0)
            .sum();
        assert!(
            d.memory_reserved <= copies,
            "device {}: {} > {copies}",
            d.name,
            d.memory_reserved
        );
    }
}

/// A partition that fails in any stage fails its job with that stage's error, and gives
/// back everything it held: admission (its key's load failed before, file unchanged),
/// reduce (its key fails to load), device (binding, or the pass, fails), tail (the
/// witness does not satisfy the circuit, caught by the self-check).
#[test]
fn a_partition_failing_in_any_stage_fails_its_job_and_frees_what_it_held() {
    let dir = key_dir();
    std::fs::copy(
        dir.path().join("bn254-multi.zkey"),
        dir.path().join("bn254-broken.zkey"),
    )
    .unwrap();
    corrupt_points(&dir.path().join("bn254-broken.zkey"));
    let engine = Engine::start(config(dir.path()), Arc::new(CpuDevices::default())).unwrap();
    let submit = |r: SubmitRequest| engine.submit(r).unwrap().job_id;
    let mut broken = request("bn254-multi", 2, Priority::Normal);
    broken.key_id = "bn254-broken".into();

    // Reduce: the first partition to need the key loads it, and the load fails.
    let (state, error) = outcome(&engine, submit(broken.clone()));
    assert_eq!(state, JobState::Failed);
    assert!(
        error.starts_with("partition ") && error.contains("key \"bn254-broken\""),
        "{error}"
    );
    assert!(error.contains("not a base-field element"), "{error}");
    // Admission: the file has not changed, so the next job fails there with the same
    // error, without loading the key again.
    let (state, again) = outcome(&engine, submit(broken.clone()));
    assert_eq!(state, JobState::Failed);
    assert_eq!(
        again.split_once(": ").unwrap().1,
        error.split_once(": ").unwrap().1
    );
    let key = |id: &str| {
        engine
            .status()
            .keys
            .into_iter()
            .find(|k| k.meta.id == id)
            .unwrap()
    };
    assert_eq!(
        (key("bn254-broken").loads, key("bn254-broken").residency),
        (0, Residency::Cold)
    );
    // A repaired file is loaded again.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::copy(
        dir.path().join("bn254-multi.zkey"),
        dir.path().join("bn254-broken.zkey"),
    )
    .unwrap();
    check_job(&engine, dir.path(), submit(broken));
    assert_eq!(key("bn254-broken").loads, 1);

    // Tail: a witness that does not satisfy the circuit fails the self-check.
    let mut r = request("bn254-multi", 2, Priority::Normal);
    r.witnesses[1] = std::fs::read(fixture("bn254", "multi_public", "bad_witness.wtns")).unwrap();
    let (state, error) = outcome(&engine, submit(r));
    assert_eq!(state, JobState::Failed);
    assert!(
        error.starts_with("partition 1: ") && error.contains("does not satisfy"),
        "{error}"
    );
    assert_nothing_held(&engine);
    engine.shutdown();

    // Device: a binding that fails, then a pass that fails.
    for (fault, what) in [
        (Fault::Bind, "binding to device test0"),
        (Fault::Pass, "planted pass failure"),
    ] {
        let devices = TestDevices {
            memory: Some(1 << 30),
            fail: fault,
            ..TestDevices::default()
        };
        let engine = Engine::start(config(dir.path()), Arc::new(devices)).unwrap();
        let job = engine
            .submit(request("bls-poseidon", 3, Priority::Normal))
            .unwrap();
        let (state, error) = outcome(&engine, job.job_id);
        assert_eq!(state, JobState::Failed);
        assert!(
            error.starts_with("partition ") && error.contains(what),
            "{error}"
        );
        // Still serving the other partitions' memory back, and other keys.
        assert_nothing_held(&engine);
        let st = engine.status();
        let copies = st.devices[0].memory_reserved;
        if fault == Fault::Bind {
            assert_eq!(copies, 0, "a failed binding holds no device memory");
        }
        engine.shutdown();
    }
}

/// `status()` never waits for a key's binding (an upload): while a slow binding runs,
/// status answers and shows the key as binding, and the job then completes.
#[test]
fn status_answers_while_a_key_is_being_bound() {
    let dir = key_dir();
    let slow = TestDevices {
        bind_delay: Duration::from_secs(3),
        ..TestDevices::default()
    };
    let engine = Engine::start(config(dir.path()), Arc::new(slow)).unwrap();
    let job = engine
        .submit(request("bn254-poseidon", 1, Priority::Normal))
        .unwrap()
        .job_id;
    let residency = || {
        engine
            .status()
            .keys
            .into_iter()
            .find(|k| k.meta.id == "bn254-poseidon")
            .unwrap()
            .residency
    };
    let mut seen = Vec::new();
    while !engine.job_status(job).unwrap().state.is_final() {
        let r = residency();
        if seen.last() != Some(&r) {
            seen.push(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(seen.contains(&Residency::Binding), "states seen: {seen:?}");
    assert_eq!(residency(), Residency::Hot);
    check_job(&engine, dir.path(), job);
    engine.shutdown();
}

#[test]
fn a_request_id_names_one_request() {
    let dir = key_dir();
    let engine = Engine::start(config(dir.path()), Arc::new(CpuDevices::default())).unwrap();
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.request_id = "req-a".into();
    let first = engine.submit(r.clone()).unwrap();
    // Other witnesses or another key under the same request id: refused, not the job.
    let mut more = request("bn254-poseidon", 2, Priority::Normal);
    more.request_id = "req-a".into();
    let mut other_key = request("bn254-multi", 1, Priority::Normal);
    other_key.request_id = "req-a".into();
    for bad in [more, other_key] {
        match engine.submit(bad) {
            Err(EngineError::RequestIdTaken { job, .. }) => assert_eq!(job, first.job_id),
            other => panic!("expected RequestIdTaken, got {other:?}"),
        }
    }
    // The same request again is the same job.
    let again = engine.submit(r).unwrap();
    assert_eq!((again.job_id, again.existing), (first.job_id, true));
    check_job(&engine, dir.path(), first.job_id);
    engine.shutdown();
}

/// Options belong to an engine and its keys, not to the process: two engines side by
/// side, one with constant-work MSMs (every key but one, which its own options exempt) and
/// a pausing throttle, the other with neither and a yielding throttle. Every proof of both
/// verifies, each key binds as its engine says, and each engine's throttle counts its own
/// bursts only.
#[test]
fn two_engines_with_their_own_options_prove_side_by_side() {
    use zkpipe_core::throttle::Mode;
    use zkpipe_engine::config::ThrottleConfig;
    let (dir_a, dir_b) = (key_dir(), key_dir());
    let throttle = |mode| ThrottleConfig {
        mode,
        every: 1,
        max_pause: Duration::from_millis(1),
    };
    let exempt = BindOptions {
        constant_work: false,
    };
    let a = EngineConfig {
        constant_work: true,
        key_options: [("bls-multi".to_string(), exempt)].into(),
        throttle: throttle(Mode::Pause),
        ..config(dir_a.path())
    };
    let b = EngineConfig {
        throttle: throttle(Mode::Yield),
        ..config(dir_b.path())
    };
    let a = Engine::start(a, Arc::new(CpuDevices::default())).unwrap();
    let b = Engine::start(b, Arc::new(CpuDevices::default())).unwrap();

    // A alone first: its bursts are its own.
    let job = a
        .submit(request("bn254-multi", 2, Priority::Normal))
        .unwrap();
    check_job(&a, dir_a.path(), job.job_id);
    assert!(a.throttle_stats().bursts > 0, "{:?}", a.throttle_stats());
    assert_eq!(b.throttle_stats().bursts, 0, "B counted A's bursts");

    // Then both at once, every key on each.
    let submit = |e: &Engine| -> Vec<u64> {
        KEYS.iter()
            .map(|(id, ..)| e.submit(request(id, 2, Priority::Normal)).unwrap().job_id)
            .collect()
    };
    let (jobs_a, jobs_b) = (submit(&a), submit(&b));
    for (engine, dir, jobs) in [(&a, &dir_a, jobs_a), (&b, &dir_b, jobs_b)] {
        for j in jobs {
            check_job(engine, dir.path(), j);
        }
    }
    assert!(b.throttle_stats().bursts > 0, "{:?}", b.throttle_stats());
    for k in a.status().keys {
        let want = k.meta.id != "bls-multi";
        assert_eq!(
            k.meta.bind.constant_work, want,
            "engine A, key {}",
            k.meta.id
        );
    }
    for k in b.status().keys {
        assert!(!k.meta.bind.constant_work, "engine B, key {}", k.meta.id);
    }
    let m = a.metrics_text();
    assert_eq!(
        metric(&m, "zkpipe_throttle_events{event=\"burst\"}"),
        a.throttle_stats().bursts as f64
    );
    a.shutdown();
    b.shutdown();
}

/// Polls `engine`'s status until key `id` is unreferenced (a finished job's leases go
/// just after the job is marked done).
fn wait_idle(engine: &Engine, id: &str) {
    for _ in 0..500 {
        let s = engine.status();
        if s.keys.iter().any(|k| k.meta.id == id && k.refs == 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("key {id} still referenced");
}

/// A key directory with two copies of the bn254 poseidon fixture, `bn254-a` and
/// `bn254-b`, and the key compiled.
fn two_poseidon_keys() -> (tempfile::TempDir, CompiledKey<Bn254>) {
    let dir = tempfile::tempdir().unwrap();
    for id in ["bn254-a", "bn254-b"] {
        let to = dir.path().join(format!("{id}.zkey"));
        std::fs::copy(fixture("bn254", "poseidon", "circuit.zkey"), to).unwrap();
    }
    let z = ZkeyFile::open(dir.path().join("bn254-a.zkey")).unwrap();
    let key = CompiledKey::<Bn254>::compile(&z, PointChecks::Trusted).unwrap();
    (dir, key)
}

/// A job of two poseidon partitions on key `id` of `dir`, proved and verified, and its
/// partitions gone from the key.
fn poseidon_job(engine: &Engine, dir: &Path, id: &str) {
    let w = std::fs::read(fixture("bn254", "poseidon", "witness.wtns")).unwrap();
    let req = SubmitRequest {
        key_id: id.into(),
        witnesses: vec![w; 2],
        priority: Priority::Normal,
        request_id: String::new(),
    };
    let job = engine.submit(req).unwrap().job_id;
    check_job(engine, dir, job);
    wait_idle(engine, id);
}

/// Key `id` in `engine`'s status.
fn key_status(engine: &Engine, id: &str) -> zkpipe_engine::KeyStatus {
    let s = engine.status();
    s.keys.into_iter().find(|k| k.meta.id == id).unwrap()
}

/// The key tiers (issue 43) on a CPU device whose memory limit makes keys stream: a key
/// is cold, then pinned after its first pass (its copy within `memory.pinned_limit`, in
/// status and metrics); a second key's copy that does not fit beside the first unpins
/// it (idle, least recently used), which stays warm; evicted, a key is cold and its
/// pinned bytes are given back. With no pinned budget keys stay warm; without a memory
/// limit nothing streams and a key is resident. Every proof verifies.
#[test]
fn streamed_keys_move_through_the_tiers_under_their_budgets() {
    use zkpipe_core::cpu::cpu_key_sets;
    use zkpipe_core::CpuOptions;
    use zkpipe_engine::Tier;
    let (dir, key) = two_poseidon_keys();
    let copy = key.points.host_bytes(true);
    let sets = cpu_key_sets(&KeyShape::of_key(&key));
    let streams = CpuOptions {
        memory_limit: Some(2 * sets.proof_bytes + 2 * sets.min_chunk_bytes()),
        ..CpuOptions::default()
    };
    let submit = |engine: &Engine, id: &str| poseidon_job(engine, dir.path(), id);
    let start = |pinned: u64, cpu: CpuOptions| {
        let cfg = EngineConfig {
            pinned_memory_limit: pinned,
            ..config(dir.path())
        };
        Engine::start(cfg, Arc::new(CpuDevices::new(cpu))).unwrap()
    };

    // Room for one copy.
    let engine = start(copy, streams);
    let s = engine.status();
    assert_eq!((s.pinned_used, s.pinned_limit), (0, copy));
    assert!(s.keys.iter().all(|k| k.tier == Tier::Cold));
    submit(&engine, "bn254-a");
    let a = key_status(&engine, "bn254-a");
    assert!(a.paths[0].starts_with("streamed"), "{:?}", a.paths);
    assert_eq!((a.tier, a.pinned_bytes), (Tier::Pinned, copy));
    assert_eq!(engine.status().pinned_used, copy);
    let m = engine.metrics_text();
    assert!(m.contains("zkpipe_keys_by_tier{tier=\"pinned\"} 1"), "{m}");
    assert!(m.contains("zkpipe_keys_by_tier{tier=\"cold\"} 1"), "{m}");
    assert!(m.contains(&format!("zkpipe_pinned_memory_reserved_bytes {copy}")));
    assert!(m.contains(&format!("zkpipe_pinned_memory_limit_bytes {copy}")));
    // Its next job reads the copy.
    submit(&engine, "bn254-a");

    // The second key's copy takes the first one's room; the first streams warm.
    submit(&engine, "bn254-b");
    let (a, b) = (
        key_status(&engine, "bn254-a"),
        key_status(&engine, "bn254-b"),
    );
    assert_eq!((a.tier, a.pinned_bytes), (Tier::Warm, 0));
    assert_eq!((b.tier, b.pinned_bytes), (Tier::Pinned, copy));
    assert_eq!(engine.status().pinned_used, copy);
    submit(&engine, "bn254-a");
    assert_eq!(key_status(&engine, "bn254-a").tier, Tier::Pinned);
    assert_eq!(key_status(&engine, "bn254-b").tier, Tier::Warm);

    // Evicted: cold, its pinned bytes given back.
    assert!(engine.evict("bn254-a").unwrap());
    assert_eq!(key_status(&engine, "bn254-a").tier, Tier::Cold);
    assert_eq!(engine.status().pinned_used, 0);
    engine.shutdown();

    // No pinned budget (the default): warm.
    let engine = start(0, streams);
    submit(&engine, "bn254-a");
    assert_eq!(key_status(&engine, "bn254-a").tier, Tier::Warm);
    assert_eq!(engine.status().pinned_used, 0);
    engine.shutdown();

    // Nothing streams: resident, nothing to pin.
    let engine = start(0, CpuOptions::default());
    submit(&engine, "bn254-a");
    let a = key_status(&engine, "bn254-a");
    assert_eq!((a.tier, a.pinned_bytes), (Tier::Resident, 0));
    engine.shutdown();

    // A pinned budget beyond the host's is refused.
    let cfg = EngineConfig {
        pinned_memory_limit: 2 << 30,
        ..config(dir.path())
    };
    let e = Engine::start(cfg, Arc::new(CpuDevices::default()))
        .err()
        .unwrap();
    assert!(e.to_string().contains("memory.pinned_limit"), "{e}");
}

/// The resident tier under a device budget that holds one key's copy (issue 43): a second
/// key's binding unbinds the first, idle, key there instead of waiting for room; the first
/// stays compiled (warm) and binds again, unbinding the second, when its next job comes.
/// Device memory reserved is one copy throughout, and every proof verifies.
#[test]
fn a_device_full_of_idle_keys_gives_the_least_recent_copy_up() {
    use zkpipe_engine::Tier;
    let (dir, key) = two_poseidon_keys();
    let shape = KeyShape::of_key(&key);
    let (copy, partition) = test_device_bytes(&shape);
    let devices = TestDevices {
        name: "small",
        // One copy and two partitions; never two copies.
        memory: Some(copy + 2 * partition),
        ..TestDevices::default()
    };
    assert!(2 * copy > copy + 2 * partition);
    let engine = Engine::start(config(dir.path()), Arc::new(devices)).unwrap();
    let run = |id: &str| poseidon_job(&engine, dir.path(), id);
    let tiers = || {
        let s = engine.status();
        assert_eq!(s.devices[0].memory_reserved, copy, "{:?}", s.devices);
        let tier = |id: &str| s.keys.iter().find(|k| k.meta.id == id).unwrap().tier;
        (tier("bn254-a"), tier("bn254-b"))
    };
    run("bn254-a");
    assert_eq!(tiers(), (Tier::Resident, Tier::Cold));
    run("bn254-b");
    assert_eq!(tiers(), (Tier::Warm, Tier::Resident));
    run("bn254-a");
    assert_eq!(tiers(), (Tier::Resident, Tier::Warm));
    let a = key_status(&engine, "bn254-a");
    assert_eq!((a.residency, a.loads), (Residency::Hot, 1));
    assert_eq!(key_status(&engine, "bn254-b").residency, Residency::Binding);
    engine.shutdown();
}

/// A binding's own host memory (`BoundKey::host_bytes`) is reserved from the host budget
/// while the key is bound, shown in its status, and given back when its copy is unbound
/// for another key's (the first key stays warm) and when the key is evicted.
#[test]
fn a_bindings_own_host_memory_is_reserved_while_it_is_bound() {
    use zkpipe_engine::Tier;
    const BESIDE: u64 = 3 << 20;
    let (dir, key) = two_poseidon_keys();
    let shape = KeyShape::of_key(&key);
    let (copy, partition) = test_device_bytes(&shape);
    let devices = TestDevices {
        name: "small",
        // One copy and two partitions; never two copies.
        memory: Some(copy + 2 * partition),
        binding_host: BESIDE,
        ..TestDevices::default()
    };
    let engine = Engine::start(config(dir.path()), Arc::new(devices)).unwrap();
    let run = |id: &str| poseidon_job(&engine, dir.path(), id);
    let key_bytes = key_status(&engine, "bn254-a").meta.host_bytes;
    let held = |id: &str| {
        let k = key_status(&engine, id);
        (k.tier, k.binding_host_bytes)
    };
    assert_eq!(engine.status().memory_used, 0);

    run("bn254-a");
    assert_eq!(held("bn254-a"), (Tier::Resident, BESIDE));
    assert_eq!(settled(&engine).memory_used, key_bytes + BESIDE);

    // Its copy gives way to the second key's: its binding's bytes go with it.
    run("bn254-b");
    assert_eq!(held("bn254-a"), (Tier::Warm, 0));
    assert_eq!(held("bn254-b"), (Tier::Resident, BESIDE));
    assert_eq!(settled(&engine).memory_used, 2 * key_bytes + BESIDE);

    // Evicted: the key's bytes and its binding's.
    assert!(engine.evict("bn254-b").unwrap());
    assert_eq!(held("bn254-b"), (Tier::Cold, 0));
    assert_eq!(engine.status().memory_used, key_bytes);
    assert!(engine.evict("bn254-a").unwrap());
    let s = engine.status();
    assert_eq!((s.memory_used, s.devices[0].memory_reserved), (0, 0));
    engine.shutdown();
}

/// A host budget with room for the key and a partition but not for what its binding holds
/// beside the key: the job fails with one line naming the key, the device, the bytes and
/// `memory.host_limit`; the binding is dropped (its device memory given back, the key
/// warm), and the next job fails the same way instead of waiting for a binding.
#[test]
fn a_binding_whose_own_host_memory_does_not_fit_fails_and_holds_nothing() {
    use zkpipe_engine::Tier;
    let dir = key_dir();
    let meta = key_meta(dir.path(), "bn254-poseidon");
    let mut cfg = config(dir.path());
    cfg.memory_limit = meta.host_bytes + meta.partition_bytes + 1024;
    let devices = TestDevices {
        memory: Some(1 << 30),
        binding_host: HUNGER,
        ..TestDevices::default()
    };
    assert!(HUNGER > cfg.memory_limit);
    let engine = Engine::start(cfg, Arc::new(devices)).unwrap();
    for _ in 0..2 {
        let job = engine
            .submit(request("bn254-poseidon", 2, Priority::Normal))
            .unwrap();
        let (state, error) = outcome(&engine, job.job_id);
        assert_eq!(state, JobState::Failed);
        assert!(!error.contains('\n'), "{error}");
        for part in [
            "key \"bn254-poseidon\"",
            "bound on test0",
            &format!("({HUNGER} host bytes beside the key)"),
            "memory.host_limit",
        ] {
            assert!(error.contains(part), "{part:?} not in {error}");
        }
        assert_nothing_held(&engine);
        let s = engine.status();
        assert_eq!(s.devices[0].memory_reserved, 0, "the binding was dropped");
        let k = key_status(&engine, "bn254-poseidon");
        assert_eq!((k.tier, k.binding_host_bytes), (Tier::Warm, 0));
        assert_eq!(k.paths, [String::new()]);
    }
    engine.shutdown();
}

/// An engine that holds at most 4 partitions pending (and 4 in a job), on one test device
/// whose passes wait while the test holds it.
fn four_pending(dir: &Path) -> (Engine, TestDevices) {
    let devices = TestDevices::default();
    let config = EngineConfig {
        max_partitions_per_job: 4,
        max_pending_partitions: 4,
        ..config(dir)
    };
    let engine = Engine::start(config, Arc::new(devices.clone())).unwrap();
    (engine, devices)
}

/// The sizes a streamed job of `partitions` of `id`'s fixture witness declares.
fn sizes(id: &str, partitions: usize) -> Vec<u64> {
    vec![witness(id).len() as u64; partitions]
}

/// A streamed job's header takes its partitions' places under max_pending_partitions at
/// once: a second header that would pass the limit is refused there (Busy, naming the
/// limit), before any witness byte, and so is a unary job; the first stream's places are
/// its own until it ends.
#[test]
fn a_streamed_job_without_room_is_refused_at_its_header() {
    let dir = key_dir();
    let (engine, _devices) = four_pending(dir.path());
    let id = "bn254-multi";
    let first = engine.plan_stream(id, &sizes(id, 3)).unwrap();
    assert_eq!(engine.pending_partitions(), 3, "the header took its places");
    let refused = engine.plan_stream(id, &sizes(id, 2)).unwrap_err();
    assert!(matches!(refused, EngineError::Busy(_)), "{refused:?}");
    assert_eq!(
        refused.to_string(),
        "engine busy: 3 partitions pending, at most 4 (pipeline.max_pending_partitions); retry later"
    );
    let unary = engine.submit(request(id, 2, Priority::Normal)).unwrap_err();
    assert!(matches!(unary, EngineError::Busy(_)), "{unary:?}");
    // A header that fits beside it is taken.
    let second = engine.plan_stream(id, &sizes(id, 1)).unwrap();
    assert_eq!(engine.pending_partitions(), 4);
    drop((first, second));
    assert_eq!(engine.pending_partitions(), 0);
    engine.shutdown();
}

/// A stream that ends without a job gives its places back at once, whichever way it
/// ends: dropped (the client went away, or a witness's start was refused), its witnesses
/// refused at submit, or its request id naming an earlier job. A job of the full size is
/// accepted after each.
#[test]
fn a_stream_that_fails_after_its_header_gives_its_places_back() {
    let dir = key_dir();
    let (engine, _devices) = four_pending(dir.path());
    let id = "bn254-multi";
    // A header of the full size, which holds every place until it is dropped or
    // submitted.
    let full = || {
        let plan = engine.plan_stream(id, &sizes(id, 4)).unwrap();
        assert_eq!(engine.pending_partitions(), 4, "the header took its places");
        plan
    };

    // Dropped mid-stream.
    drop(full());
    assert_eq!(engine.pending_partitions(), 0);

    // Refused at submit: a malformed witness.
    let plan = full();
    let mut bad = request(id, 4, Priority::Normal);
    bad.witnesses[2] = b"wtns-but-not-one".to_vec();
    let e = engine.submit_streamed(plan, bad).unwrap_err();
    assert!(matches!(e, EngineError::MalformedWitness { .. }), "{e:?}");
    assert_eq!(engine.pending_partitions(), 0);

    // Refused at submit: more witnesses than the header declared.
    let plan = engine.plan_stream(id, &sizes(id, 1)).unwrap();
    assert_eq!(engine.pending_partitions(), 1);
    let e = engine
        .submit_streamed(plan, request(id, 2, Priority::Normal))
        .unwrap_err();
    assert!(matches!(e, EngineError::InvalidRequest(_)), "{e:?}");
    assert_eq!(engine.pending_partitions(), 0);

    // A request id that names an earlier job: that job, and its places are not counted
    // twice once it is done.
    let mut named = request(id, 4, Priority::Normal);
    named.request_id = "req".into();
    let job = engine.submit_streamed(full(), named.clone()).unwrap();
    assert!(!job.existing);
    check_job(&engine, dir.path(), job.job_id);
    assert_eq!(settled(&engine).pending_partitions, 0);
    let again = engine.submit_streamed(full(), named).unwrap();
    assert_eq!((again.job_id, again.existing), (job.job_id, true));
    assert_eq!(engine.pending_partitions(), 0);

    let last = engine
        .submit_streamed(full(), request(id, 4, Priority::Normal))
        .unwrap();
    check_job(&engine, dir.path(), last.job_id);
    assert_eq!(settled(&engine).pending_partitions, 0);
    engine.shutdown();
}

/// An accepted streamed job is counted once: its header's places become its partitions'
/// (pending stays at its size while they wait for the device, not twice that), and they
/// are all given back once it is done.
#[test]
fn an_accepted_streamed_job_is_counted_once() {
    let dir = key_dir();
    let (engine, devices) = four_pending(dir.path());
    let id = "bn254-multi";
    devices.holds.hold(0);
    let plan = engine.plan_stream(id, &sizes(id, 3)).unwrap();
    assert_eq!(engine.pending_partitions(), 3, "the header took its places");
    let job = engine
        .submit_streamed(plan, request(id, 3, Priority::Normal))
        .unwrap();
    assert_eq!(engine.pending_partitions(), 3, "counted once");
    wait_until("a pass on the device", || !devices.log.on(0).is_empty());
    assert_eq!(engine.pending_partitions(), 3);
    // One place is left: a one-partition header fits, a two-partition one does not.
    let e = engine.plan_stream(id, &sizes(id, 2)).unwrap_err();
    assert!(matches!(e, EngineError::Busy(_)), "{e:?}");
    drop(engine.plan_stream(id, &sizes(id, 1)).unwrap());
    devices.holds.release(0);
    check_job(&engine, dir.path(), job.job_id);
    assert_eq!(settled(&engine).pending_partitions, 0);
    drop(engine.plan_stream(id, &sizes(id, 4)).unwrap());
    engine.shutdown();
}
