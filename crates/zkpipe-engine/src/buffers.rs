//! Large buffers are recycled, not freed: a [`BufferPool`] hands out `Vec<T>`s of a given
//! length, takes them back from any thread through a drain-all [`ReturnList`], and keeps
//! up to a byte limit of them for reuse. What it must really free goes to one bounded
//! [`DeallocWorker`], so that freeing never happens in bursts on many threads at once
//! (DESIGN.md, lesson 5).

use crate::return_list::ReturnList;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

type AnyBuf = Box<dyn Any + Send>;

/// One thread that drops what it is sent, through a bounded channel: senders wait when it
/// is behind, so deallocation never runs unbounded.
pub struct DeallocWorker {
    tx: Mutex<Option<SyncSender<AnyBuf>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    freed: std::sync::Arc<AtomicU64>,
}

impl DeallocWorker {
    /// Starts the worker with a queue of `capacity` items.
    pub fn start(capacity: usize) -> Self {
        let (tx, rx) = sync_channel::<AnyBuf>(capacity.max(1));
        let freed = std::sync::Arc::new(AtomicU64::new(0));
        let f = std::sync::Arc::clone(&freed);
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
                }
            }
            None => drop(item),
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

struct Returned {
    class: (TypeId, usize),
    bytes: u64,
    buf: AnyBuf,
}

#[derive(Default)]
struct Free {
    by_class: HashMap<(TypeId, usize), Vec<(u64, AnyBuf)>>,
    bytes: u64,
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
    /// Buffers sent to the deallocation worker.
    pub freed: u64,
}

/// The pool (see the module doc).
pub struct BufferPool {
    returns: ReturnList<Returned>,
    free: Mutex<Free>,
    max_bytes: u64,
    dealloc: DeallocWorker,
    recycled: AtomicU64,
    allocated: AtomicU64,
    sent_to_free: AtomicU64,
}

impl BufferPool {
    /// A pool keeping at most `max_bytes` of idle buffers, freeing the rest on a worker
    /// with a queue of `dealloc_queue` items.
    pub fn new(max_bytes: u64, dealloc_queue: usize) -> Self {
        Self {
            returns: ReturnList::default(),
            free: Mutex::new(Free::default()),
            max_bytes,
            dealloc: DeallocWorker::start(dealloc_queue),
            recycled: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            sent_to_free: AtomicU64::new(0),
        }
    }

    /// A vector of exactly `len` items: recycled (stale contents) if one of this type and
    /// length is idle, else newly allocated with `T::default()`.
    pub fn take<T: Default + Clone + Send + 'static>(&self, len: usize) -> Vec<T> {
        let class = (TypeId::of::<T>(), len);
        let found = {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            self.drain_returns(&mut free);
            let found = free.by_class.get_mut(&class).and_then(Vec::pop);
            if let Some((bytes, _)) = &found {
                free.bytes -= bytes;
            }
            found
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
    pub fn give<T: Send + 'static>(&self, v: Vec<T>) {
        if v.capacity() == 0 {
            return;
        }
        let bytes = (v.capacity() * std::mem::size_of::<T>()) as u64;
        self.returns.push(Returned {
            class: (TypeId::of::<T>(), v.len()),
            bytes,
            buf: Box::new(v),
        });
    }

    /// Frees `v` on the deallocation worker, bypassing the pool.
    pub fn free_later<T: Send + 'static>(&self, v: Vec<T>) {
        if v.capacity() > 0 {
            self.sent_to_free.fetch_add(1, Ordering::Relaxed);
            self.dealloc.free(Box::new(v));
        }
    }

    /// Frees any value (e.g. an evicted key) on the deallocation worker.
    pub fn free_any(&self, v: AnyBuf) {
        self.sent_to_free.fetch_add(1, Ordering::Relaxed);
        self.dealloc.free(v);
    }

    /// Moves returned buffers into the free lists; frees whatever exceeds the limit.
    fn drain_returns(&self, free: &mut Free) {
        if self.returns.is_empty() {
            return;
        }
        for r in self.returns.take_all() {
            if free.bytes + r.bytes > self.max_bytes {
                self.sent_to_free.fetch_add(1, Ordering::Relaxed);
                self.dealloc.free(r.buf);
            } else {
                free.bytes += r.bytes;
                free.by_class
                    .entry(r.class)
                    .or_default()
                    .push((r.bytes, r.buf));
            }
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
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        PoolStats {
            pooled_bytes: free.bytes,
            recycled: self.recycled.load(Ordering::Relaxed),
            allocated: self.allocated.load(Ordering::Relaxed),
            freed: self.sent_to_free.load(Ordering::Relaxed),
        }
    }

    /// Frees everything and stops the deallocation worker.
    pub fn shutdown(&self) {
        self.trim();
        self.dealloc.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_given_back_on_other_threads_are_recycled_by_class() {
        let pool = std::sync::Arc::new(BufferPool::new(1 << 20, 4));
        let a: Vec<u64> = pool.take(1000);
        let p = a.as_ptr();
        let p2 = std::sync::Arc::clone(&pool);
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
}
