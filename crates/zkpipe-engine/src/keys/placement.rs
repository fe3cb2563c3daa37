//! Which device a partition of a key goes to, as a pure function of the devices' loads:
//! a key sticks to the devices it is placed on (its points are resident there), goes to
//! the least loaded of them, and is copied to another device as soon as that device is
//! less loaded than every device the key is on: a key with work queued or in a pass gets
//! a copy on each idle device that has room, before its own devices are saturated.

/// One device's load as placement sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLoad {
    /// Partitions routed to it and not yet through their pass: queued, waiting for its
    /// gate, or in a pass.
    pub assigned: usize,
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
    /// A device the key is placed on now (its first, or a copy on a less loaded device).
    New(usize),
}

/// The device for a partition of a key placed on `placed` (in placement order), with the
/// devices' `loads` (by index) and at most `max_devices` copies of a key. The least
/// loaded (by partitions assigned, then keys) of the key's devices is chosen, unless the
/// key is on fewer than `max_devices` and a device it is not on, with room, has fewer
/// partitions assigned: that device gets a copy. On first use the device with the fewest
/// keys (then the least loaded) is chosen whatever its room (admission decides whether
/// the key fits at all), which spreads keys over the devices.
pub fn place(placed: &[usize], loads: &[DeviceLoad], max_devices: usize) -> Placement {
    let load = |d: usize| (loads[d].assigned, loads[d].keys);
    let best = placed
        .iter()
        .copied()
        .filter(|&d| d < loads.len())
        .min_by_key(|&d| load(d));
    let Some(b) = best else {
        let first = (0..loads.len()).min_by_key(|&d| (loads[d].keys, loads[d].assigned));
        return Placement::New(first.unwrap_or(0));
    };
    if placed.len() >= max_devices.max(1) || loads[b].assigned == 0 {
        return Placement::Placed(b);
    }
    let candidate = (0..loads.len())
        .filter(|d| !placed.contains(d) && loads[*d].room)
        .min_by_key(|&d| load(d));
    match candidate {
        Some(c) if loads[c].assigned < loads[b].assigned => Placement::New(c),
        _ => Placement::Placed(b),
    }
}

/// Whether `device`, idle, may take a queued partition of a key placed on `placed` from
/// another device's queue: yes where the key is on it already (`Placed`), or where a copy
/// fits there (`New`: fewer than `max_devices` copies, and `room` on it).
pub fn take_over(
    placed: &[usize],
    device: usize,
    room: bool,
    max_devices: usize,
) -> Option<Placement> {
    if placed.contains(&device) {
        Some(Placement::Placed(device))
    } else if room && placed.len() < max_devices.max(1) {
        Some(Placement::New(device))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(n: usize) -> Vec<DeviceLoad> {
        vec![
            DeviceLoad {
                assigned: 0,
                keys: 0,
                room: true
            };
            n
        ]
    }

    #[test]
    fn a_new_key_goes_to_the_device_with_fewest_keys_then_least_loaded() {
        let mut loads = idle(3);
        loads[0].keys = 2;
        loads[1].assigned = 1;
        assert_eq!(place(&[], &loads, 3), Placement::New(2));
        // Room does not matter for a key's first device.
        loads[2].room = false;
        assert_eq!(place(&[], &loads, 3), Placement::New(2));
        // Fewer keys first: a busy device without keys gets it.
        loads[2].keys = 1;
        assert_eq!(place(&[], &loads, 3), Placement::New(1));
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

    /// One partition in a pass on the key's device, nothing queued: the next goes to a
    /// copy on the idle device rather than wait (the copy is made before the key's
    /// device has a queue).
    #[test]
    fn a_key_with_a_pass_running_is_copied_to_an_idle_device() {
        let mut loads = idle(2);
        loads[0].assigned = 1;
        assert_eq!(place(&[0], &loads, 2), Placement::New(1));
        // Once on both, the least loaded copy.
        assert_eq!(place(&[0, 1], &loads, 2), Placement::Placed(1));
        loads[1].assigned = 2;
        assert_eq!(place(&[0, 1], &loads, 2), Placement::Placed(0));
    }

    #[test]
    fn a_busy_key_is_copied_to_a_less_loaded_device_with_room() {
        let mut loads = idle(3);
        loads[0].assigned = 3;
        loads[1].assigned = 1;
        loads[2].assigned = 2;
        assert_eq!(place(&[0], &loads, 3), Placement::New(1));
        // No room there: the next best with room.
        loads[1].room = false;
        assert_eq!(place(&[0], &loads, 3), Placement::New(2));
        // None less loaded than the key's own device: stay.
        loads[2].assigned = 3;
        assert_eq!(place(&[0], &loads, 3), Placement::Placed(0));
    }

    #[test]
    fn copies_stop_at_max_devices_and_the_least_loaded_copy_wins() {
        let mut loads = idle(3);
        loads[0].assigned = 4;
        loads[1].assigned = 2;
        assert_eq!(place(&[0, 1], &loads, 2), Placement::Placed(1));
        assert_eq!(place(&[0], &loads, 1), Placement::Placed(0));
        assert_eq!(place(&[0], &loads, 0), Placement::Placed(0), "0 means 1");
    }

    #[test]
    fn placements_on_devices_that_no_longer_exist_are_ignored() {
        let loads = idle(2);
        assert_eq!(place(&[7], &loads, 2), Placement::New(0));
    }

    #[test]
    fn an_idle_device_takes_over_a_key_it_holds_or_has_room_for() {
        assert_eq!(take_over(&[0, 1], 1, false, 2), Some(Placement::Placed(1)));
        assert_eq!(take_over(&[0], 1, true, 2), Some(Placement::New(1)));
        assert_eq!(take_over(&[0], 1, false, 2), None, "no room");
        assert_eq!(take_over(&[0], 1, true, 1), None, "max_devices");
    }
}
