//! Witnesses stored packed (`zkpipe_formats::packed_wtns`): smaller on disk, and handed
//! back as stored when a reopened store resumes their jobs (the engine reads them packed).

use super::*;
use crate::testing::wtns;
use std::path::Path;
use zkpipe_engine::job_store::{fingerprint, JobStore, NewJob, StoredPartition};
use zkpipe_engine::Priority;
use zkpipe_formats::packed_wtns::{pack, unpack, MAGIC};

fn accept(s: &SqliteStore, witnesses: Vec<&[u8]>) {
    s.accept(&NewJob {
        key_shape: String::new(),
        key_id: "k",
        priority: Priority::Normal,
        request_id: "",
        fingerprint: fingerprint("k", &witnesses),
        witnesses,
        packed: false,
        staged: Vec::new(),
    })
    .unwrap();
}

/// The spilled files' sizes, by name.
fn files(dir: &Path) -> Vec<u64> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir.join(WITNESS_DIR))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, len)| len).collect()
}

#[test]
fn witnesses_of_bits_are_stored_packed_and_handed_back_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (bits, full) = (wtns(20_000, true), wtns(3_000, false));
    {
        // Inline up to 64 KiB: the 625 KiB witness of bits packs to ~30 KiB and goes
        // into the database; the 94 KiB full-size one stays a file, as it came.
        let s = SqliteStore::open(dir.path())
            .unwrap()
            .with_inline_max(64 << 10);
        accept(&s, vec![&bits, &full]);
        assert_eq!(files(dir.path()), [full.len() as u64]);
        // Files only: the packed witness is a file of its packed size.
        let s2 = s.with_inline_max(0);
        accept(&s2, vec![&bits]);
        let sizes = files(dir.path());
        assert_eq!(sizes.len(), 2);
        assert!(
            sizes.iter().any(|&n| n * 10 < bits.len() as u64),
            "{sizes:?}"
        );
        let packed: Vec<Vec<u8>> = std::fs::read_dir(dir.path().join(WITNESS_DIR))
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .filter(|b| b.starts_with(MAGIC))
            .collect();
        assert_eq!(packed.len(), 1);
    }
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    let pending = |j: usize, p: usize| match &jobs[j].partitions[p] {
        StoredPartition::Pending(w) => w.clone(),
        other => panic!("job {j} partition {p}: {other:?}"),
    };
    let packed = pack(&bits).unwrap();
    assert_eq!(pending(0, 0), packed, "inline, packed");
    assert_eq!(pending(0, 1), full, "a file, as it came");
    assert_eq!(pending(1, 0), packed, "a file, packed");
    assert_eq!(unpack(&pending(1, 0)).unwrap(), bits);
}

/// The store does not read a witness's values: a damaged packed one is handed back as it
/// is, and the engine fails its job alone, naming the partition (the engine's suite,
/// `restart.rs`), instead of the whole reopening failing.
#[test]
fn a_damaged_packed_witness_is_handed_back_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(0);
        accept(&s, vec![&wtns(1000, true)]);
    }
    let file = std::fs::read_dir(dir.path().join(WITNESS_DIR))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&file).unwrap();
    let cut = &bytes[..bytes.len() - 1];
    std::fs::write(&file, cut).unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    assert!(matches!(&jobs[0].partitions[0], StoredPartition::Pending(w) if w == cut));
}
