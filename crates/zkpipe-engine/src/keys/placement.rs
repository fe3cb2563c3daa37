//! Which device a partition of a key goes to, as a pure function of the devices' loads:
//! a key sticks to the devices it is placed on (its points are resident there), and is
//! copied to another device only while every device it is on has a queue.

/// One device's load as placement sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLoad {
    /// Partitions waiting in its queue.
    pub queued: usize,
    /// Keys placed on it.
    pub keys: usize,
    /// Whether its memory budget has room for one more copy of this key and a partition.
    pub room: bool,
}

/// Where a partition goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A device the key is already placed on.
    Placed(usize),
    /// A device the key is placed on now (its first, or a copy while the others are busy).
    New(usize),
}

/// The device for a partition of a key placed on `placed` (in placement order), with the
/// devices' `loads` (by index) and at most `max_devices` copies of a key. The least
/// loaded (by queue, then keys) of the key's devices is chosen; while it has a queue and
/// the key is on fewer than `max_devices`, a less loaded device with room gets a copy.
/// On first use the least loaded device is chosen whatever its room (admission decides
/// whether the key fits at all).
pub fn place(placed: &[usize], loads: &[DeviceLoad], max_devices: usize) -> Placement {
    let load = |d: usize| (loads[d].queued, loads[d].keys);
    let best = placed
        .iter()
        .copied()
        .filter(|&d| d < loads.len())
        .min_by_key(|&d| load(d));
    if let Some(b) = best {
        if loads[b].queued == 0 || placed.len() >= max_devices.max(1) {
            return Placement::Placed(b);
        }
    }
    let candidate = (0..loads.len())
        .filter(|d| !placed.contains(d))
        .filter(|&d| best.is_none() || loads[d].room)
        .min_by_key(|&d| load(d));
    match (best, candidate) {
        (Some(b), Some(c)) if loads[c].queued < loads[b].queued => Placement::New(c),
        (Some(b), _) => Placement::Placed(b),
        (None, Some(c)) => Placement::New(c),
        (None, None) => Placement::New(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(n: usize) -> Vec<DeviceLoad> {
        vec![
            DeviceLoad {
                queued: 0,
                keys: 0,
                room: true
            };
            n
        ]
    }

    #[test]
    fn a_new_key_goes_to_the_least_loaded_device() {
        let mut loads = idle(3);
        loads[0].keys = 2;
        loads[1].queued = 1;
        assert_eq!(place(&[], &loads, 3), Placement::New(2));
        // Room does not matter for a key's first device.
        loads[2].room = false;
        assert_eq!(place(&[], &loads, 3), Placement::New(2));
        assert_eq!(
            place(&[], &[], 3),
            Placement::New(0),
            "no loads known: device 0"
        );
    }

    #[test]
    fn a_placed_key_sticks_while_its_device_is_idle() {
        let mut loads = idle(2);
        loads[0].keys = 5;
        assert_eq!(place(&[0], &loads, 2), Placement::Placed(0));
    }

    #[test]
    fn a_busy_key_is_copied_to_a_less_loaded_device_with_room() {
        let mut loads = idle(3);
        loads[0].queued = 3;
        loads[1].queued = 1;
        loads[2].queued = 2;
        assert_eq!(place(&[0], &loads, 3), Placement::New(1));
        // No room there: the next best with room.
        loads[1].room = false;
        assert_eq!(place(&[0], &loads, 3), Placement::New(2));
        // None less loaded than the key's own device: stay.
        loads[2].queued = 3;
        assert_eq!(place(&[0], &loads, 3), Placement::Placed(0));
    }

    #[test]
    fn copies_stop_at_max_devices_and_the_least_loaded_copy_wins() {
        let mut loads = idle(3);
        loads[0].queued = 4;
        loads[1].queued = 2;
        assert_eq!(place(&[0, 1], &loads, 2), Placement::Placed(1));
        assert_eq!(place(&[0], &loads, 1), Placement::Placed(0));
        assert_eq!(place(&[0], &loads, 0), Placement::Placed(0), "0 means 1");
    }

    #[test]
    fn placements_on_devices_that_no_longer_exist_are_ignored() {
        let loads = idle(2);
        assert_eq!(place(&[7], &loads, 2), Placement::New(0));
    }
}
