//! Lock-free, push-only lists of things given back to their owner from other threads.
//! Threads that release something the owner allocated push it here; the owner takes it
//! back when it next needs a buffer, in one of two ways (`memory.returns`):
//!
//! - [`ReturnList`] (drain-all, the default): the owner takes everything at once with one
//!   atomic exchange. Per-item pops gain nothing over it
//!   (lab/experiments/018f-buffer-returns-allocator.md).
//! - [`PopList`] (cas-pop): the owner pops items one at a time, one compare-and-swap each
//!   (a Treiber pop), kept to measure against drain-all. Only the holder of the list's one
//!   [`Popper`] can pop, which is what makes the pop safe.
//!
//! This module holds the engine crate's only `unsafe` code: a Treiber-stack push, a
//! swap-with-null take and a single-consumer Treiber pop, over `Box`ed nodes.
#![allow(unsafe_code)]

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

struct Node<T> {
    item: T,
    next: *mut Node<T>,
}

/// Pushes `item` onto the stack at `head` (any thread, lock-free).
fn push<T>(head: &AtomicPtr<Node<T>>, item: T) {
    let node = Box::into_raw(Box::new(Node {
        item,
        next: ptr::null_mut(),
    }));
    let mut now = head.load(Ordering::Relaxed);
    loop {
        // SAFETY: `node` came from Box::into_raw above and is not shared until the
        // exchange below succeeds; after that nobody writes its `next` again.
        unsafe { (*node).next = now };
        match head.compare_exchange_weak(now, node, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => now = seen,
        }
    }
}

/// Takes every item on the stack at `head` with one atomic exchange (most recent first).
fn take_all<T>(head: &AtomicPtr<Node<T>>) -> Vec<T> {
    let mut p = head.swap(ptr::null_mut(), Ordering::Acquire);
    let mut out = Vec::new();
    while !p.is_null() {
        // SAFETY: the swap made this thread the only owner of the whole chain, and
        // every node in it was created by Box::into_raw in `push`.
        let node = unsafe { Box::from_raw(p) };
        p = node.next;
        out.push(node.item);
    }
    out
}

/// The drain-all list (see the module doc).
pub struct ReturnList<T> {
    head: AtomicPtr<Node<T>>,
}

// SAFETY: nodes are owned exclusively by the list between push and take; items cross
// threads only by value, so `T: Send` suffices.
unsafe impl<T: Send> Send for ReturnList<T> {}
// SAFETY: as above; all shared access goes through the atomic head.
unsafe impl<T: Send> Sync for ReturnList<T> {}

impl<T> Default for ReturnList<T> {
    fn default() -> Self {
        Self {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

impl<T> ReturnList<T> {
    /// Adds `item` (any thread, lock-free).
    pub fn push(&self, item: T) {
        push(&self.head, item);
    }

    /// Takes every item pushed so far with one atomic exchange (most recent first). Any
    /// number of threads may call it at once: each gets a disjoint part.
    pub fn take_all(&self) -> Vec<T> {
        take_all(&self.head)
    }

    /// Whether the list looks empty right now.
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }
}

impl<T> Drop for ReturnList<T> {
    fn drop(&mut self) {
        drop(self.take_all());
    }
}

/// The cas-pop list (see the module doc): many threads push, the holder of its one
/// [`Popper`] pops.
pub struct PopList<T> {
    head: AtomicPtr<Node<T>>,
    /// Which [`Popper`] may pop.
    id: u64,
}

/// The right to pop from one [`PopList`]: exactly one exists per list, and popping needs
/// it by `&mut`, so at most one thread pops a list at a time.
#[derive(Debug)]
pub struct Popper {
    list: u64,
}

// SAFETY: as for ReturnList: nodes are owned by the list between push and pop, items
// cross threads only by value.
unsafe impl<T: Send> Send for PopList<T> {}
// SAFETY: as above; all shared access goes through the atomic head, and removal needs
// the list's one `Popper` by `&mut`.
unsafe impl<T: Send> Sync for PopList<T> {}

impl<T> PopList<T> {
    /// An empty list and its popper.
    pub fn new() -> (Self, Popper) {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let list = Self {
            head: AtomicPtr::new(ptr::null_mut()),
            id,
        };
        (list, Popper { list: id })
    }

    /// Adds `item` (any thread, lock-free).
    pub fn push(&self, item: T) {
        push(&self.head, item);
    }

    /// Removes the most recent item with one compare-and-swap (retried while pushes
    /// move the head). Panics if `popper` belongs to another list.
    pub fn pop(&self, popper: &mut Popper) -> Option<T> {
        assert_eq!(popper.list, self.id, "a Popper pops only its own list");
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            if head.is_null() {
                return None;
            }
            // SAFETY: a Treiber pop is unsafe in general (a concurrent popper may free
            // `head`, or pop it and push it back so that the exchange below succeeds
            // with a stale `next`: ABA). Neither can happen here, because this thread is
            // the only one removing nodes: popping needs the list's one `Popper` by
            // `&mut` (the buffer pool keeps it under its mutex), the list has no other
            // way to remove a node while shared, and pushers only add new nodes on top.
            // So `head` stays allocated until we free it, a pointer equal to `head` in
            // the exchange is that same node still on top, and its `next` was written
            // before the pusher's Release exchange published it, which our Acquire load
            // (or failed exchange) saw; nobody writes it afterwards.
            let next = unsafe { (*head).next };
            match self
                .head
                .compare_exchange_weak(head, next, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: the exchange unlinked `head`, which came from
                    // Box::into_raw in `push`; no other thread can reach it now.
                    let node = unsafe { Box::from_raw(head) };
                    return Some(node.item);
                }
                Err(now) => head = now,
            }
        }
    }

    /// Whether the list looks empty right now.
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }
}

impl<T> Drop for PopList<T> {
    fn drop(&mut self) {
        // `&mut self`: nobody else can push or pop now.
        drop(take_all(&self.head));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn many_threads_push_and_one_take_gets_everything_once() {
        let list = Arc::new(ReturnList::default());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let list = Arc::clone(&list);
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        list.push(t * 1000 + i);
                    }
                })
            })
            .collect();
        let mut got = Vec::new();
        for t in threads {
            got.extend(list.take_all());
            t.join().unwrap();
        }
        got.extend(list.take_all());
        got.sort();
        assert_eq!(got, (0..4000).collect::<Vec<_>>());
        assert!(list.is_empty());
        list.push(7);
        drop(list); // frees the remaining node
    }

    #[test]
    fn many_threads_push_while_one_pops_and_each_item_comes_out_once() {
        let (list, mut popper) = PopList::new();
        let list = Arc::new(list);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let list = Arc::clone(&list);
                std::thread::spawn(move || {
                    for i in 0..5000 {
                        list.push(t * 5000 + i);
                    }
                })
            })
            .collect();
        let mut got = Vec::new();
        while got.len() < 40_000 {
            match list.pop(&mut popper) {
                Some(x) => got.push(x),
                None => std::thread::yield_now(),
            }
        }
        for t in threads {
            t.join().unwrap();
        }
        assert!(list.pop(&mut popper).is_none() && list.is_empty());
        got.sort();
        assert_eq!(got, (0..40_000).collect::<Vec<_>>());
        list.push(7);
        list.push(8);
        assert_eq!(list.pop(&mut popper), Some(8), "most recent first");
        drop(list); // frees the remaining node
    }

    #[test]
    #[should_panic(expected = "its own list")]
    fn a_popper_pops_only_its_own_list() {
        let (a, _) = PopList::<u8>::new();
        let (_b, mut other) = PopList::<u8>::new();
        a.push(1);
        a.pop(&mut other);
    }
}
