//! Large buffers are recycled, not freed: a [`BufferPool`] hands out `Vec<T>`s of a given
//! length, takes them back from any thread through a lock-free list, and keeps up to a
//! byte limit of them for reuse. What it must really free goes to a [`Deallocator`]: by
//! default one bounded [`DeallocWorker`], so that freeing never happens in bursts on many
//! threads at once (DESIGN.md, lesson 5).
//!
//! Two switches (`[memory]` in the config file) replace these mechanisms, to measure them
//! against the alternatives; the defaults are today's:
//!
//! - `dealloc` ([`DeallocMode`]): `worker` (the bounded worker), `in-place` (drop on the
//!   calling thread at once) or `detached` (a new detached thread per free, unbounded).
//! - `returns` ([`ReturnMode`]): `drain-all` (the owner takes every returned buffer with
//!   one atomic swap, [`ReturnList`]), `cas-pop` (one compare-and-swap per buffer,
//!   [`PopList`]) or `free` (nothing is recycled; a buffer given back is dropped there).

pub use crate::config::{DeallocMode, ReturnMode};
use crate::return_list::{PopList, Popper, ReturnList};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

type AnyBuf = Box<dyn Any + Send>;

/// One thread that drops what it is sent, through a bounded channel: senders wait when it
/// is behind, so deallocation never runs unbounded.
pub struct DeallocWorker {
    tx: Mutex<Option<SyncSender<AnyBuf>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    freed: Arc<AtomicU64>,
}

impl DeallocWorker {
    /// Starts the worker with a queue of `capacity` items.
    pub fn start(capacity: usize) -> Self {
        let (tx, rx) = sync_channel::<AnyBuf>(capacity.max(1));
        let freed = Arc::new(AtomicU64::new(0));
        let f = Arc::clone(&freed);
        let thread = std::thread::Builder::new()
            .name("zkpipe-dealloc".into())
            .spawn(move || {
                for item in rx {
                    drop(item);
                    f.fetch_add(1, Ordering::Relaxed);
                }
            })
            .ok();
        Self {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(thread),
            freed,
        }
    }

    /// Hands `item` to the worker (waits while its queue is full). After shutdown the item
    /// is dropped here.
    pub fn free(&self, item: AnyBuf) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match tx {
            Some(tx) => {
                if let Err(e) = tx.send(item) {
                    drop(e.0);
                    self.freed.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                drop(item);
                self.freed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Items freed so far.
    pub fn freed(&self) -> u64 {
        self.freed.load(Ordering::Relaxed)
    }

    /// Stops taking items and waits for the queue to drain.
    pub fn shutdown(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

/// Frees each item on a new detached thread of its own (`dealloc = "detached"`), counting
/// the threads alive so that [`DetachedFrees::shutdown`] can wait for all of them.
pub struct DetachedFrees {
    state: Arc<Detached>,
}

struct Detached {
    /// (threads whose item is not dropped yet, shut down).
    live: Mutex<(u64, bool)>,
    none_live: Condvar,
    started: AtomicU64,
    freed: AtomicU64,
}

impl Detached {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, bool)> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One detached free. Dropping it (on its thread, or where the thread could not start)
/// drops the item, then the guard: fields drop in order, the guard even if the item's
/// drop panics.
struct DetachedFree {
    _item: AnyBuf,
    _counted: CountedOut,
}

/// Counts one detached free as done.
struct CountedOut(Arc<Detached>);

impl Drop for CountedOut {
    fn drop(&mut self) {
        self.0.freed.fetch_add(1, Ordering::Relaxed);
        let mut live = self.0.lock();
        live.0 -= 1;
        if live.0 == 0 {
            self.0.none_live.notify_all();
        }
    }
}

impl Default for DetachedFrees {
    fn default() -> Self {
        Self {
            state: Arc::new(Detached {
                live: Mutex::new((0, false)),
                none_live: Condvar::new(),
                started: AtomicU64::new(0),
                freed: AtomicU64::new(0),
            }),
        }
    }
}

impl DetachedFrees {
    /// Drops `item` on a new detached thread (here, after shutdown or if no thread can
    /// be started).
    pub fn free(&self, item: AnyBuf) {
        {
            let mut live = self.state.lock();
            if live.1 {
                drop(live);
                drop(item);
                self.state.freed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            live.0 += 1;
        }
        let job = DetachedFree {
            _item: item,
            _counted: CountedOut(Arc::clone(&self.state)),
        };
        // On failure `spawn` drops the closure, and with it `job`: the item is freed here.
        let started = std::thread::Builder::new()
            .name("zkpipe-dealloc-detached".into())
            .spawn(move || drop(job));
        if started.is_ok() {
            self.state.started.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Items freed so far.
    pub fn freed(&self) -> u64 {
        self.state.freed.load(Ordering::Relaxed)
    }

    /// Threads started so far.
    pub fn started(&self) -> u64 {
        self.state.started.load(Ordering::Relaxed)
    }

    /// Threads that have not dropped their item yet.
    pub fn live(&self) -> u64 {
        self.state.lock().0
    }

    /// Frees later items in place, and waits until every thread has dropped its item.
    pub fn shutdown(&self) {
        let mut live = self.state.lock();
        live.1 = true;
        while live.0 > 0 {
            live = self
                .state
                .none_live
                .wait(live)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// What frees the items a [`BufferPool`] lets go of, per [`DeallocMode`].
pub enum Deallocator {
    /// One bounded worker thread.
    Worker(DeallocWorker),
    /// On the calling thread, at once; the count of items freed.
    InPlace(AtomicU64),
    /// A detached thread per item.
    Detached(DetachedFrees),
}

impl Deallocator {
    /// Starts one of `mode`; `queue` is the worker's queue length.
    pub fn start(mode: DeallocMode, queue: usize) -> Self {
        match mode {
            DeallocMode::Worker => Self::Worker(DeallocWorker::start(queue)),
            DeallocMode::InPlace => Self::InPlace(AtomicU64::new(0)),
            DeallocMode::Detached => Self::Detached(DetachedFrees::default()),
        }
    }

    /// Frees `item` (see [`DeallocMode`]).
    pub fn free(&self, item: AnyBuf) {
        match self {
            Self::Worker(w) => w.free(item),
            Self::InPlace(freed) => {
                drop(item);
                freed.fetch_add(1, Ordering::Relaxed);
            }
            Self::Detached(d) => d.free(item),
        }
    }

    /// Items freed (dropped) so far.
    pub fn freed(&self) -> u64 {
        match self {
            Self::Worker(w) => w.freed(),
            Self::InPlace(freed) => freed.load(Ordering::Relaxed),
            Self::Detached(d) => d.freed(),
        }
    }

    /// (detached threads started so far, those not done yet); zeros in other modes.
    pub fn threads(&self) -> (u64, u64) {
        match self {
            Self::Detached(d) => (d.started(), d.live()),
            _ => (0, 0),
        }
    }

    /// Waits until everything handed over is freed; later items are freed in place.
    pub fn shutdown(&self) {
        match self {
            Self::Worker(w) => w.shutdown(),
            Self::InPlace(_) => {}
            Self::Detached(d) => d.shutdown(),
        }
    }
}

struct Returned {
    class: (TypeId, usize),
    bytes: u64,
    buf: AnyBuf,
}

/// Where given-back buffers wait for the pool, per [`ReturnMode`].
enum Returns {
    DrainAll(ReturnList<Returned>),
    /// The popper is in the pool's [`Free`], under its mutex.
    CasPop(PopList<Returned>),
    Free,
}

type FreeLists = HashMap<(TypeId, usize), Vec<(u64, AnyBuf)>>;

#[derive(Default)]
struct Free {
    by_class: FreeLists,
    bytes: u64,
    /// The one right to pop [`Returns::CasPop`]'s list: whoever holds the pool's mutex.
    popper: Option<Popper>,
}

/// Counters of a [`BufferPool`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes held for reuse now.
    pub pooled_bytes: u64,
    /// Buffers handed out from the pool.
    pub recycled: u64,
    /// Buffers newly allocated.
    pub allocated: u64,
    /// Buffers (and other items, such as evicted keys) let go of rather than kept: sent to
    /// the deallocator, or, with `returns = "free"`, dropped where they were given back.
    pub freed: u64,
    /// Of `freed`, those dropped on the thread that gave them back (`returns = "free"`).
    pub dropped_on_return: u64,
    /// Items the deallocator has dropped so far: `freed - dropped_on_return` once it
    /// has caught up (after shutdown, always).
    pub dealloc_done: u64,
    /// Detached threads started (`dealloc = "detached"`; 0 otherwise).
    pub dealloc_threads: u64,
    /// Detached threads that have not dropped their item yet.
    pub dealloc_threads_live: u64,
}

/// The pool (see the module doc).
pub struct BufferPool {
    returns: Returns,
    free: Mutex<Free>,
    max_bytes: u64,
    dealloc: Deallocator,
    recycled: AtomicU64,
    allocated: AtomicU64,
    sent_to_free: AtomicU64,
    dropped_on_return: AtomicU64,
}

impl BufferPool {
    /// A pool keeping at most `max_bytes` of idle buffers, freeing the rest on a worker
    /// with a queue of `dealloc_queue` items, recycling returns with drain-all (the
    /// defaults of [`BufferPool::with_modes`]).
    pub fn new(max_bytes: u64, dealloc_queue: usize) -> Self {
        Self::with_modes(
            max_bytes,
            dealloc_queue,
            DeallocMode::default(),
            ReturnMode::default(),
        )
    }

    /// A pool keeping at most `max_bytes` of idle buffers, freeing the rest as `dealloc`
    /// says (a worker's queue holds `dealloc_queue` items) and taking buffers given back
    /// as `returns` says.
    pub fn with_modes(
        max_bytes: u64,
        dealloc_queue: usize,
        dealloc: DeallocMode,
        returns: ReturnMode,
    ) -> Self {
        let mut free = Free::default();
        let returns = match returns {
            ReturnMode::DrainAll => Returns::DrainAll(ReturnList::default()),
            ReturnMode::CasPop => {
                let (list, popper) = PopList::new();
                free.popper = Some(popper);
                Returns::CasPop(list)
            }
            ReturnMode::Free => Returns::Free,
        };
        Self {
            returns,
            free: Mutex::new(free),
            max_bytes,
            dealloc: Deallocator::start(dealloc, dealloc_queue),
            recycled: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            sent_to_free: AtomicU64::new(0),
            dropped_on_return: AtomicU64::new(0),
        }
    }

    /// A vector of exactly `len` items: recycled (stale contents) if one of this type and
    /// length is idle, else newly allocated with `T::default()`.
    pub fn take<T: Default + Clone + Send + 'static>(&self, len: usize) -> Vec<T> {
        let class = (TypeId::of::<T>(), len);
        let found = match self.returns {
            Returns::Free => None, // nothing is ever kept
            _ => {
                let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
                self.drain_returns(&mut free);
                let found = free.by_class.get_mut(&class).and_then(Vec::pop);
                if let Some((bytes, _)) = &found {
                    free.bytes -= bytes;
                }
                found
            }
        };
        if let Some(v) = found.and_then(|(_, b)| b.downcast::<Vec<T>>().ok()) {
            self.recycled.fetch_add(1, Ordering::Relaxed);
            let mut v = *v;
            v.resize(len, T::default());
            return v;
        }
        self.allocated.fetch_add(1, Ordering::Relaxed);
        vec![T::default(); len]
    }

    /// Gives `v` back for reuse (any thread; lock-free). Its length is its size class.
    /// With `returns = "free"` it is dropped here instead.
    pub fn give<T: Send + 'static>(&self, v: Vec<T>) {
        if v.capacity() == 0 {
            return;
        }
        let returned = |v: Vec<T>| Returned {
            class: (TypeId::of::<T>(), v.len()),
            bytes: (v.capacity() * std::mem::size_of::<T>()) as u64,
            buf: Box::new(v),
        };
        match &self.returns {
            Returns::DrainAll(list) => list.push(returned(v)),
            Returns::CasPop(list) => list.push(returned(v)),
            Returns::Free => {
                drop(v);
                self.sent_to_free.fetch_add(1, Ordering::Relaxed);
                self.dropped_on_return.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Frees `v` on the deallocator, bypassing the pool.
    pub fn free_later<T: Send + 'static>(&self, v: Vec<T>) {
        if v.capacity() > 0 {
            self.sent_to_free.fetch_add(1, Ordering::Relaxed);
            self.dealloc.free(Box::new(v));
        }
    }

    /// Frees any value (e.g. an evicted key) on the deallocator.
    pub fn free_any(&self, v: AnyBuf) {
        self.sent_to_free.fetch_add(1, Ordering::Relaxed);
        self.dealloc.free(v);
    }

    /// Moves returned buffers into the free lists; frees whatever exceeds the limit.
    fn drain_returns(&self, free: &mut Free) {
        match &self.returns {
            Returns::DrainAll(list) => {
                if list.is_empty() {
                    return;
                }
                for r in list.take_all() {
                    self.keep_or_free(&mut free.by_class, &mut free.bytes, r);
                }
            }
            Returns::CasPop(list) => {
                let Free {
                    by_class,
                    bytes,
                    popper,
                } = free;
                let Some(popper) = popper.as_mut() else {
                    return;
                };
                // One compare-and-swap per buffer, until the list is empty.
                while let Some(r) = list.pop(popper) {
                    self.keep_or_free(by_class, bytes, r);
                }
            }
            Returns::Free => {}
        }
    }

    fn keep_or_free(&self, by_class: &mut FreeLists, bytes: &mut u64, r: Returned) {
        if *bytes + r.bytes > self.max_bytes {
            self.sent_to_free.fetch_add(1, Ordering::Relaxed);
            self.dealloc.free(r.buf);
        } else {
            *bytes += r.bytes;
            by_class.entry(r.class).or_default().push((r.bytes, r.buf));
        }
    }

    /// Frees every idle buffer (e.g. after a key's buffers are no longer needed).
    pub fn trim(&self) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        self.drain_returns(&mut free);
        for (_, bufs) in free.by_class.drain() {
            for (_, b) in bufs {
                self.sent_to_free.fetch_add(1, Ordering::Relaxed);
                self.dealloc.free(b);
            }
        }
        free.bytes = 0;
    }

    /// Counters.
    pub fn stats(&self) -> PoolStats {
        let pooled_bytes = self.free.lock().unwrap_or_else(|e| e.into_inner()).bytes;
        let (dealloc_threads, dealloc_threads_live) = self.dealloc.threads();
        PoolStats {
            pooled_bytes,
            recycled: self.recycled.load(Ordering::Relaxed),
            allocated: self.allocated.load(Ordering::Relaxed),
            freed: self.sent_to_free.load(Ordering::Relaxed),
            dropped_on_return: self.dropped_on_return.load(Ordering::Relaxed),
            dealloc_done: self.dealloc.freed(),
            dealloc_threads,
            dealloc_threads_live,
        }
    }

    /// Frees everything and stops the deallocator, waiting until it has freed all it was
    /// given.
    pub fn shutdown(&self) {
        self.trim();
        self.dealloc.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, AtomicUsize};
    use std::time::Duration;

    #[test]
    fn buffers_given_back_on_other_threads_are_recycled_by_class() {
        let pool = Arc::new(BufferPool::new(1 << 20, 4));
        let a: Vec<u64> = pool.take(1000);
        let p = a.as_ptr();
        let p2 = Arc::clone(&pool);
        std::thread::spawn(move || p2.give(a)).join().unwrap();
        let other: Vec<u32> = pool.take(1000); // another type: a new allocation
        let again: Vec<u64> = pool.take(1000);
        assert_eq!(again.as_ptr(), p, "the same buffer comes back");
        assert_eq!(again.len(), 1000);
        let s = pool.stats();
        assert_eq!((s.recycled, s.allocated), (1, 2));
        drop(other);
        pool.shutdown();
    }

    #[test]
    fn buffers_beyond_the_limit_go_to_the_deallocation_worker() {
        let pool = BufferPool::new(8 * 100, 1);
        for _ in 0..3 {
            pool.give(vec![0u64; 100]);
        }
        let _: Vec<u8> = pool.take(1); // drains the returns
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
    const RETURN_MODES: [ReturnMode; 3] =
        [ReturnMode::DrainAll, ReturnMode::CasPop, ReturnMode::Free];

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
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (pool, drops) = (Arc::clone(&pool), Arc::clone(&drops));
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
                                0 => pool.give(v),
                                1 => pool.free_later(v),
                                _ => pool.free_any(Box::new(v)),
                            }
                            if i % 10 == 9 {
                                drop(pool.take::<u8>(1)); // drains the returns
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
                let givers: Vec<_> = (0..GIVERS)
                    .map(|g| {
                        let (pool, ledger) = (Arc::clone(&pool), Arc::clone(&ledger));
                        std::thread::spawn(move || {
                            for id in (g..BUFFERS).step_by(GIVERS) {
                                let mut v = vec![Tag::default(); len_of(id)];
                                v[0] = Tag {
                                    id,
                                    ledger: Some(Arc::clone(&ledger)),
                                };
                                pool.give(v);
                            }
                        })
                    })
                    .collect();
                let mut taken = 0u64;
                let mut take = |len: usize| {
                    let mut v: Vec<Tag> = pool.take(len);
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
}
