//! Large buffers are recycled, not freed: a [`BufferPool`] hands out typed lists
//! ([`Buffers<T>`], one per element type a caller uses), each of which hands out `Vec<T>`s
//! of a given length, takes them back from any thread through a lock-free list, and keeps
//! them for reuse while all lists together stay under the pool's byte limit. What it must
//! really free goes to a [`Deallocator`]: by default one bounded [`DeallocWorker`], so
//! that freeing never happens in bursts on many threads at once.
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
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Something handed over to be dropped elsewhere: never looked into again, so its type
/// is not kept.
pub type Garbage = Box<dyn Send>;

/// One thread that drops what it is sent, through a bounded channel: senders wait when it
/// is behind, so deallocation never runs unbounded.
pub struct DeallocWorker {
    tx: Mutex<Option<SyncSender<Garbage>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    freed: Arc<AtomicU64>,
}

impl DeallocWorker {
    /// Starts the worker with a queue of `capacity` items.
    pub fn start(capacity: usize) -> Self {
        let (tx, rx) = sync_channel::<Garbage>(capacity.max(1));
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
    pub fn free(&self, item: Garbage) {
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
    _item: Garbage,
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
    pub fn free(&self, item: Garbage) {
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
    pub fn free(&self, item: Garbage) {
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

/// A buffer given back, with the bytes it holds.
struct Returned<T> {
    bytes: u64,
    buf: Vec<T>,
}

/// Where one list's given-back buffers wait for it, per [`ReturnMode`].
enum Returns<T> {
    DrainAll(ReturnList<Returned<T>>),
    /// The popper is in the list's [`Idle`], under its mutex.
    CasPop(PopList<Returned<T>>),
    Free,
}

/// One list's idle buffers by length, with the bytes each holds.
struct Idle<T> {
    by_len: HashMap<usize, Vec<(u64, Vec<T>)>>,
    /// The one right to pop [`Returns::CasPop`]'s list: whoever holds the list's mutex.
    popper: Option<Popper>,
}

/// The buffers of one element type: the free lists [`Buffers`] handles share.
struct List<T> {
    returns: Returns<T>,
    idle: Mutex<Idle<T>>,
}

/// What [`BufferPool::trim`] needs of a list, whatever its element type.
trait Trim: Send + Sync {
    /// Frees every idle buffer of the list on `pool`'s deallocator.
    fn trim(&self, pool: &BufferPool);
}

impl<T: Send + 'static> List<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Idle<T>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves returned buffers into the idle lists; frees whatever exceeds the pool's limit.
    fn drain_returns(&self, idle: &mut Idle<T>, pool: &BufferPool) {
        match &self.returns {
            Returns::DrainAll(list) => {
                if list.is_empty() {
                    return;
                }
                for r in list.take_all() {
                    pool.keep_or_free(&mut idle.by_len, r);
                }
            }
            Returns::CasPop(list) => {
                let Idle { by_len, popper } = idle;
                let Some(popper) = popper.as_mut() else {
                    return;
                };
                // One compare-and-swap per buffer, until the list is empty.
                while let Some(r) = list.pop(popper) {
                    pool.keep_or_free(by_len, r);
                }
            }
            Returns::Free => {}
        }
    }
}

impl<T: Send + 'static> Trim for List<T> {
    fn trim(&self, pool: &BufferPool) {
        let mut idle = self.lock();
        self.drain_returns(&mut idle, pool);
        for (_, bufs) in idle.by_len.drain() {
            for (bytes, b) in bufs {
                pool.pooled_bytes.fetch_sub(bytes, Ordering::AcqRel);
                pool.sent_to_free.fetch_add(1, Ordering::Relaxed);
                pool.dealloc.free(Box::new(b));
            }
        }
    }
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

/// The pool (see the module doc): its byte limit, counters and deallocator, shared by
/// the typed lists it hands out ([`BufferPool::buffers`]).
pub struct BufferPool {
    returns: ReturnMode,
    /// Every list handed out, for [`BufferPool::trim`].
    lists: Mutex<Vec<Arc<dyn Trim>>>,
    /// Bytes idle in all lists together, at most `max_bytes`.
    pooled_bytes: AtomicU64,
    max_bytes: u64,
    dealloc: Deallocator,
    recycled: AtomicU64,
    allocated: AtomicU64,
    sent_to_free: AtomicU64,
    dropped_on_return: AtomicU64,
}

/// The buffers of element type `T` of one [`BufferPool`]: takes and gives back `Vec<T>`s
/// by length. Clones share the list.
pub struct Buffers<T> {
    list: Arc<List<T>>,
    pool: Arc<BufferPool>,
}

impl<T> Clone for Buffers<T> {
    fn clone(&self) -> Self {
        Self {
            list: Arc::clone(&self.list),
            pool: Arc::clone(&self.pool),
        }
    }
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
        Self {
            returns,
            lists: Mutex::new(Vec::new()),
            pooled_bytes: AtomicU64::new(0),
            max_bytes,
            dealloc: Deallocator::start(dealloc, dealloc_queue),
            recycled: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            sent_to_free: AtomicU64::new(0),
            dropped_on_return: AtomicU64::new(0),
        }
    }

    /// A new list of this pool for buffers of `T` (each caller keeps its own handle and
    /// clones it: a second call makes a second list).
    pub fn buffers<T: Send + 'static>(self: &Arc<Self>) -> Buffers<T> {
        let mut idle = Idle {
            by_len: HashMap::new(),
            popper: None,
        };
        let returns = match self.returns {
            ReturnMode::DrainAll => Returns::DrainAll(ReturnList::default()),
            ReturnMode::CasPop => {
                let (list, popper) = PopList::new();
                idle.popper = Some(popper);
                Returns::CasPop(list)
            }
            ReturnMode::Free => Returns::Free,
        };
        let list = Arc::new(List {
            returns,
            idle: Mutex::new(idle),
        });
        self.lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::clone(&list) as Arc<dyn Trim>);
        Buffers {
            list,
            pool: Arc::clone(self),
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
    pub fn free_any(&self, v: Garbage) {
        self.sent_to_free.fetch_add(1, Ordering::Relaxed);
        self.dealloc.free(v);
    }

    /// Keeps `r` idle in `by_len` if the pool's limit has room for it, else frees it.
    fn keep_or_free<T: Send + 'static>(
        &self,
        by_len: &mut HashMap<usize, Vec<(u64, Vec<T>)>>,
        r: Returned<T>,
    ) {
        let max = self.max_bytes;
        let room = self
            .pooled_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                (b + r.bytes <= max).then_some(b + r.bytes)
            });
        if room.is_ok() {
            by_len
                .entry(r.buf.len())
                .or_default()
                .push((r.bytes, r.buf));
        } else {
            self.sent_to_free.fetch_add(1, Ordering::Relaxed);
            self.dealloc.free(Box::new(r.buf));
        }
    }

    /// Frees every idle buffer (e.g. after a key's buffers are no longer needed).
    pub fn trim(&self) {
        let lists = self.lists.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for list in lists {
            list.trim(self);
        }
    }

    /// Counters.
    pub fn stats(&self) -> PoolStats {
        let (dealloc_threads, dealloc_threads_live) = self.dealloc.threads();
        PoolStats {
            pooled_bytes: self.pooled_bytes.load(Ordering::Acquire),
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

impl<T: Send + 'static> Buffers<T> {
    /// A vector of exactly `len` items: recycled (stale contents) if one of this length
    /// is idle, else newly allocated with `T::default()`.
    pub fn take(&self, len: usize) -> Vec<T>
    where
        T: Default + Clone,
    {
        let found = match self.list.returns {
            Returns::Free => None, // nothing is ever kept
            _ => {
                let mut idle = self.list.lock();
                self.list.drain_returns(&mut idle, &self.pool);
                let found = idle.by_len.get_mut(&len).and_then(Vec::pop);
                if let Some((bytes, _)) = &found {
                    self.pool.pooled_bytes.fetch_sub(*bytes, Ordering::AcqRel);
                }
                found
            }
        };
        if let Some((_, mut v)) = found {
            self.pool.recycled.fetch_add(1, Ordering::Relaxed);
            v.resize(len, T::default());
            return v;
        }
        self.pool.allocated.fetch_add(1, Ordering::Relaxed);
        vec![T::default(); len]
    }

    /// Gives `v` back for reuse (any thread; lock-free). Its length is its size class.
    /// With `returns = "free"` it is dropped here instead.
    pub fn give(&self, v: Vec<T>) {
        if v.capacity() == 0 {
            return;
        }
        let returned = |v: Vec<T>| Returned {
            bytes: (v.capacity() * std::mem::size_of::<T>()) as u64,
            buf: v,
        };
        match &self.list.returns {
            Returns::DrainAll(list) => list.push(returned(v)),
            Returns::CasPop(list) => list.push(returned(v)),
            Returns::Free => {
                drop(v);
                self.pool.sent_to_free.fetch_add(1, Ordering::Relaxed);
                self.pool.dropped_on_return.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Frees `v` on the pool's deallocator, bypassing the list.
    pub fn free_later(&self, v: Vec<T>) {
        self.pool.free_later(v);
    }

    /// Moves buffers given back so far into the list (as `take` does first).
    #[cfg(test)]
    fn drain_returns(&self) {
        let mut idle = self.list.lock();
        self.list.drain_returns(&mut idle, &self.pool);
    }
}

#[cfg(test)]
mod tests;
