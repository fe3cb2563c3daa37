use super::*;
use std::sync::atomic::{AtomicU32, AtomicUsize};
use std::time::Duration;

#[test]
fn buffers_given_back_on_other_threads_are_recycled_by_class() {
    let pool = Arc::new(BufferPool::new(1 << 20, 4));
    let (longs, ints) = (pool.buffers::<u64>(), pool.buffers::<u32>());
    let a: Vec<u64> = longs.take(1000);
    let p = a.as_ptr();
    let l2 = longs.clone();
    std::thread::spawn(move || l2.give(a)).join().unwrap();
    let other: Vec<u32> = ints.take(1000); // another type: a new allocation
    let again: Vec<u64> = longs.take(1000);
    assert_eq!(again.as_ptr(), p, "the same buffer comes back");
    assert_eq!(again.len(), 1000);
    let s = pool.stats();
    assert_eq!((s.recycled, s.allocated), (1, 2));
    drop(other);
    pool.shutdown();
}

#[test]
fn buffers_beyond_the_limit_go_to_the_deallocation_worker() {
    let pool = Arc::new(BufferPool::new(8 * 100, 1));
    let longs = pool.buffers::<u64>();
    for _ in 0..3 {
        longs.give(vec![0u64; 100]);
    }
    longs.drain_returns();
    let s = pool.stats();
    assert_eq!(s.pooled_bytes, 800);
    assert_eq!(s.freed, 2);
    pool.shutdown();
    assert_eq!(
        pool.dealloc.freed(),
        3,
        "the trim at shutdown freed the last one"
    );
}

const DEALLOC_MODES: [DeallocMode; 3] = [
    DeallocMode::Worker,
    DeallocMode::InPlace,
    DeallocMode::Detached,
];
const RETURN_MODES: [ReturnMode; 3] = [ReturnMode::DrainAll, ReturnMode::CasPop, ReturnMode::Free];

/// An element that counts its drops; a slow one takes a while to drop.
struct Counted {
    drops: Arc<AtomicUsize>,
    slow: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        if self.slow {
            std::thread::sleep(Duration::from_millis(30));
        }
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn every_dealloc_mode_frees_everything_by_shutdown() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 60;
    for mode in DEALLOC_MODES {
        // Room for a few buffers: the rest of what is given back is freed at once,
        // what is kept is freed by the trim at shutdown.
        let pool = Arc::new(BufferPool::with_modes(
            (8 * std::mem::size_of::<Counted>()) as u64,
            2,
            mode,
            ReturnMode::DrainAll,
        ));
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = pool.buffers::<Counted>();
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, drops) = (Arc::clone(&pool), Arc::clone(&drops));
                let counted = counted.clone();
                std::thread::spawn(move || {
                    let mut elements = 0;
                    for i in 0..PER_THREAD {
                        let len = 1 + (t * PER_THREAD + i) % 7;
                        elements += len;
                        let v: Vec<Counted> = (0..len)
                            .map(|k| Counted {
                                drops: Arc::clone(&drops),
                                slow: i == 0 && k == 0,
                            })
                            .collect();
                        match i % 3 {
                            0 => counted.give(v),
                            1 => counted.free_later(v),
                            _ => pool.free_any(Box::new(v)),
                        }
                        if i % 10 == 9 {
                            counted.drain_returns();
                        }
                    }
                    elements
                })
            })
            .collect();
        let elements: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        pool.shutdown();
        assert_eq!(
            drops.load(Ordering::Relaxed),
            elements,
            "{mode}: every element of every buffer is dropped by the end of shutdown"
        );
        let s = pool.stats();
        let items = (THREADS * PER_THREAD) as u64;
        assert_eq!((s.freed, s.dealloc_done), (items, items), "{mode}: {s:?}");
        assert_eq!(s.pooled_bytes, 0);
        assert_eq!(s.dealloc_threads_live, 0, "{mode}");
        let threads = if mode == DeallocMode::Detached {
            items
        } else {
            0
        };
        assert_eq!(s.dealloc_threads, threads, "{mode}: one thread per free");
        // After shutdown every mode frees in place.
        pool.free_any(Box::new(vec![Counted {
            drops: Arc::clone(&drops),
            slow: false,
        }]));
        assert_eq!(drops.load(Ordering::Relaxed), elements + 1, "{mode}");
        assert_eq!(pool.stats().dealloc_done, items + 1, "{mode}");
    }
}

/// How often each buffer id was recycled (taken back out by the owner) and freed.
struct Ledger {
    recycled: Vec<AtomicU32>,
    freed: Vec<AtomicU32>,
}

/// An element that carries its buffer's id; dropping it records the id as freed.
#[derive(Clone, Default)]
struct Tag {
    id: usize,
    ledger: Option<Arc<Ledger>>,
}

impl Drop for Tag {
    fn drop(&mut self) {
        if let Some(l) = &self.ledger {
            l.freed[self.id].fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[test]
fn every_return_mode_recycles_or_frees_each_buffer_exactly_once() {
    const GIVERS: usize = 8;
    const BUFFERS: usize = 10_000;
    let len_of = |id: usize| 1 + id % 3;
    for returns in RETURN_MODES {
        for dealloc in DEALLOC_MODES {
            let ledger = Arc::new(Ledger {
                recycled: (0..BUFFERS).map(|_| AtomicU32::new(0)).collect(),
                freed: (0..BUFFERS).map(|_| AtomicU32::new(0)).collect(),
            });
            // Keeps about 64 of them: the rest of what comes back is freed.
            let max = (64 * 2 * std::mem::size_of::<Tag>()) as u64;
            let pool = Arc::new(BufferPool::with_modes(max, 8, dealloc, returns));
            let tags = pool.buffers::<Tag>();
            let givers: Vec<_> = (0..GIVERS)
                .map(|g| {
                    let (tags, ledger) = (tags.clone(), Arc::clone(&ledger));
                    std::thread::spawn(move || {
                        for id in (g..BUFFERS).step_by(GIVERS) {
                            let mut v = vec![Tag::default(); len_of(id)];
                            v[0] = Tag {
                                id,
                                ledger: Some(Arc::clone(&ledger)),
                            };
                            tags.give(v);
                        }
                    })
                })
                .collect();
            let mut taken = 0u64;
            let mut take = |len: usize| {
                let mut v: Vec<Tag> = tags.take(len);
                assert_eq!(v.len(), len);
                if let Some(l) = v[0].ledger.take() {
                    // A recycled buffer: recorded here, and dropped as spent.
                    assert_eq!(len_of(v[0].id), len, "taken from its own class");
                    l.recycled[v[0].id].fetch_add(1, Ordering::Relaxed);
                    taken += 1;
                }
            };
            let mut len = 0;
            while !givers.iter().all(|g| g.is_finished()) {
                len = len % 3 + 1;
                take(len);
            }
            for g in givers {
                g.join().unwrap();
            }
            for _ in 0..10 {
                for len in 1..=3 {
                    take(len);
                }
            }
            pool.shutdown();
            let what = format!("returns = {returns}, dealloc = {dealloc}");
            for id in 0..BUFFERS {
                let r = ledger.recycled[id].load(Ordering::Relaxed);
                let f = ledger.freed[id].load(Ordering::Relaxed);
                assert_eq!(
                    (r, f, r + f),
                    (r, f, 1),
                    "{what}: buffer {id} was recycled {r} and freed {f} times"
                );
            }
            let s = pool.stats();
            assert_eq!(s.recycled, taken, "{what}: {s:?}");
            assert_eq!(s.freed, BUFFERS as u64 - taken, "{what}: {s:?}");
            assert_eq!(s.dealloc_done, s.freed - s.dropped_on_return, "{what}");
            if returns == ReturnMode::Free {
                assert_eq!(
                    (s.recycled, s.dropped_on_return, s.dealloc_done),
                    (0, BUFFERS as u64, 0),
                    "{what}: nothing recycled, all dropped where given back"
                );
            } else {
                assert!(s.recycled > 0 && s.freed > 0, "{what}: {s:?}");
                assert_eq!(s.dropped_on_return, 0, "{what}");
            }
        }
    }
}
