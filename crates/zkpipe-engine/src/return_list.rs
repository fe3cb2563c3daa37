//! A lock-free, push-only list that its owner empties whole with one atomic exchange
//! (drain-all). Threads that release something the owner allocated push it here; the owner
//! takes everything at once when it next needs a buffer. Per-item pops and batched
//! "packets" measured worse elsewhere (DESIGN.md, lesson 8).
//!
//! This module holds the engine crate's only `unsafe` code: a Treiber-stack push and a
//! swap-with-null take, over `Box`ed nodes.
#![allow(unsafe_code)]

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

struct Node<T> {
    item: T,
    next: *mut Node<T>,
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
        let node = Box::into_raw(Box::new(Node {
            item,
            next: ptr::null_mut(),
        }));
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` came from Box::into_raw above and is not shared until the
            // exchange below succeeds.
            unsafe { (*node).next = head };
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Takes every item pushed so far with one atomic exchange (most recent first).
    pub fn take_all(&self) -> Vec<T> {
        let mut p = self.head.swap(ptr::null_mut(), Ordering::Acquire);
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
}
