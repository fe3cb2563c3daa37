//! A bounded, closable priority queue between two pipeline stages: producers block while
//! it is full (back-pressure), consumers block while it is empty, and the highest-priority
//! item (earliest job first among equals) leaves first, so priorities act at every queue.

use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// What [`PriorityQueue::pop_wait`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Popped<T> {
    /// The first item.
    Item(T),
    /// Nothing within the time given.
    Empty,
    /// Nothing, and nothing will come: the queue is closed and empty.
    Closed,
}

/// The ordering key of a queued item: higher priority first, then lower sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// Priority (higher leaves first).
    pub priority: u8,
    /// Arrival order (lower leaves first among equal priorities).
    pub seq: u64,
}

impl Ord for Order {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.priority
            .cmp(&other.priority)
            .then(other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Order {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

struct Entry<T> {
    order: Order,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.order == other.order
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order.cmp(&other.order)
    }
}

struct State<T> {
    heap: BinaryHeap<Entry<T>>,
    closed: bool,
}

/// A bounded priority queue (see the module doc).
pub struct PriorityQueue<T> {
    capacity: usize,
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
}

impl<T> PriorityQueue<T> {
    /// An empty queue holding at most `capacity` items (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            state: Mutex::new(State {
                heap: BinaryHeap::new(),
                closed: false,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an item, waiting while the queue is full. Gives the item back if it is closed.
    pub fn push(&self, order: Order, item: T) -> Result<(), T> {
        let mut s = self.lock();
        while s.heap.len() >= self.capacity && !s.closed {
            s = self.not_full.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.closed {
            return Err(item);
        }
        s.heap.push(Entry { order, item });
        self.not_empty.notify_one();
        Ok(())
    }

    /// Takes the first item, waiting while the queue is empty; `None` once closed and empty.
    pub fn pop(&self) -> Option<T> {
        let mut s = self.lock();
        loop {
            if let Some(e) = s.heap.pop() {
                self.not_full.notify_one();
                return Some(e.item);
            }
            if s.closed {
                return None;
            }
            s = self.not_empty.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Takes the first item, waiting up to `timeout` while the queue is empty (not at
    /// all for zero; at most an hour): for a worker that looks elsewhere for work when its
    /// own queue stays empty.
    pub fn pop_wait(&self, timeout: Duration) -> Popped<T> {
        let deadline = Instant::now() + timeout.min(Duration::from_secs(3600));
        let mut s = self.lock();
        loop {
            if let Some(e) = s.heap.pop() {
                self.not_full.notify_one();
                return Popped::Item(e.item);
            }
            if s.closed {
                return Popped::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Popped::Empty;
            }
            s = self
                .not_empty
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Takes the first item if `admit` says yes (it may change the item either way);
    /// never waits.
    pub fn pop_if(&self, admit: impl FnOnce(&mut T) -> bool) -> Option<T> {
        let mut s = self.lock();
        let mut head = s.heap.peek_mut()?;
        if admit(&mut head.item) {
            let e = std::collections::binary_heap::PeekMut::pop(head);
            self.not_full.notify_one();
            Some(e.item)
        } else {
            None
        }
    }

    /// Takes up to `max` more items, never waiting, for a worker that popped one and can
    /// serve others like it in the same pass (a device batch). `select` sees the queued
    /// items highest priority first, until `max` are taken; an item it accepts leaves with
    /// what `select` returned for it (e.g. memory reserved for it), one it refuses stays
    /// queued. A closed queue still gives what it holds, as [`PriorityQueue::pop`] does.
    pub fn take_matching<R>(
        &self,
        max: usize,
        mut select: impl FnMut(&T) -> Option<R>,
    ) -> Vec<(T, R)> {
        let mut taken = Vec::new();
        if max == 0 {
            return taken;
        }
        let mut s = self.lock();
        // Ascending order, so popping from the end visits the highest priority first.
        let mut sorted = std::mem::take(&mut s.heap).into_sorted_vec();
        let mut keep = Vec::with_capacity(sorted.len());
        while let Some(e) = sorted.pop() {
            match select(&e.item) {
                Some(r) => taken.push((e.item, r)),
                None => keep.push(e),
            }
            if taken.len() == max {
                keep.append(&mut sorted);
                break;
            }
        }
        s.heap = keep.into();
        if !taken.is_empty() {
            self.not_full.notify_all();
        }
        taken
    }

    /// Removes (and returns) every item for which `remove` is true.
    pub fn remove_where(&self, mut remove: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut s = self.lock();
        let (out, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut s.heap)
            .into_vec()
            .into_iter()
            .partition(|e| remove(&e.item));
        s.heap = keep.into();
        if !out.is_empty() {
            self.not_full.notify_all();
        }
        out.into_iter().map(|e| e.item).collect()
    }

    /// Items queued now for which `matches` is true.
    pub fn count(&self, mut matches: impl FnMut(&T) -> bool) -> usize {
        self.lock().heap.iter().filter(|e| matches(&e.item)).count()
    }

    /// Items queued now.
    pub fn len(&self) -> usize {
        self.lock().heap.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether [`PriorityQueue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Refuses further pushes and wakes every waiter; queued items can still be popped.
    pub fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn o(priority: u8, seq: u64) -> Order {
        Order { priority, seq }
    }

    #[test]
    fn highest_priority_then_oldest_leaves_first() {
        let q = PriorityQueue::new(10);
        q.push(o(1, 1), "normal-1").unwrap();
        q.push(o(0, 0), "low-0").unwrap();
        q.push(o(3, 5), "critical-5").unwrap();
        q.push(o(1, 0), "normal-0").unwrap();
        let got: Vec<_> = (0..4).map(|_| q.pop().unwrap()).collect();
        assert_eq!(got, ["critical-5", "normal-0", "normal-1", "low-0"]);
    }

    #[test]
    fn a_full_queue_blocks_until_popped_and_close_wakes_everyone() {
        let q = Arc::new(PriorityQueue::new(1));
        q.push(o(0, 0), 0).unwrap();
        let q2 = Arc::clone(&q);
        let producer = std::thread::spawn(move || q2.push(o(0, 1), 1));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(q.pop(), Some(0));
        producer.join().unwrap().unwrap();
        assert_eq!(q.remove_where(|&x| x == 1), vec![1]);
        let q3 = Arc::clone(&q);
        let consumer = std::thread::spawn(move || q3.pop());
        std::thread::sleep(std::time::Duration::from_millis(20));
        q.close();
        assert_eq!(consumer.join().unwrap(), None);
        assert_eq!(q.push(o(0, 2), 2), Err(2));
    }

    #[test]
    fn pop_wait_gives_an_item_or_says_empty_or_closed() {
        let q = Arc::new(PriorityQueue::new(4));
        assert_eq!(q.pop_wait(Duration::ZERO), Popped::Empty);
        q.push(o(0, 0), 7).unwrap();
        assert_eq!(q.pop_wait(Duration::ZERO), Popped::Item(7));
        let q2 = Arc::clone(&q);
        let producer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            q2.push(o(0, 1), 8)
        });
        assert_eq!(q.pop_wait(Duration::from_secs(60)), Popped::Item(8));
        producer.join().unwrap().unwrap();
        q.push(o(0, 2), 9).unwrap();
        q.close();
        assert_eq!(
            q.pop_wait(Duration::ZERO),
            Popped::Item(9),
            "a closed queue still gives"
        );
        assert_eq!(q.pop_wait(Duration::from_secs(60)), Popped::Closed);
    }

    #[test]
    fn take_matching_takes_the_best_matches_up_to_max_and_leaves_the_rest() {
        let q = PriorityQueue::new(10);
        for (p, seq, x) in [
            (1, 0, 10),
            (3, 1, 11),
            (1, 2, 20),
            (0, 3, 12),
            (3, 4, 21),
            (2, 5, 14),
        ] {
            q.push(o(p, seq), x).unwrap();
        }
        let mut seen = Vec::new();
        // Even items, at most 3: the best three of 14, 10, 20, 12 (queue order).
        let got = q.take_matching(3, |&x| {
            seen.push(x);
            (x % 2 == 0).then_some(x * 100)
        });
        assert_eq!(got, [(14, 1400), (10, 1000), (20, 2000)]);
        assert_eq!(seen, [11, 21, 14, 10, 20], "best first, stopping at max");
        assert_eq!(q.take_matching(0, |_| Some(())), []);
        assert_eq!(q.take_matching(5, |&x| (x > 100).then_some(())), []);
        // What was refused or not reached stays, in priority order.
        assert_eq!(q.len(), 3);
        let rest: Vec<_> = (0..3).map(|_| q.pop().unwrap()).collect();
        assert_eq!(rest, [11, 21, 12]);
    }

    #[test]
    fn take_matching_frees_room_and_a_closed_queue_still_gives_its_items() {
        let q = Arc::new(PriorityQueue::new(2));
        q.push(o(0, 0), 0).unwrap();
        q.push(o(0, 1), 1).unwrap();
        let q2 = Arc::clone(&q);
        let producer = std::thread::spawn(move || q2.push(o(0, 2), 2));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(q.take_matching(1, |&x| (x == 1).then_some(())), [(1, ())]);
        producer.join().unwrap().unwrap();
        q.close();
        assert_eq!(q.take_matching(5, |_| Some(())), [(0, ()), (2, ())]);
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }
}
