//! The simulated cluster: every tray is free, running one job, or unavailable.

use crate::contenders::free_map::FreeMap;

/// The state of one tray.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayState {
    Free,
    /// Allocated to this job (exclusive: one job per tray).
    Busy(usize),
    /// Failed, drained or under repair: not healthy capacity.
    Down,
}

/// `racks` racks of `trays_per_rack` trays; tray `i` lies in rack `i / trays_per_rack`.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub racks: usize,
    pub trays_per_rack: usize,
    state: Vec<TrayState>,
    /// Tray `i` is free iff it is free and healthy: the map placement decisions see.
    free: FreeMap,
    n_busy: usize,
    n_down: usize,
    /// Unavailable trays per rack.
    down_in_rack: Vec<u32>,
}

impl Cluster {
    /// A cluster with the trays in `down` unavailable and every other tray free.
    pub fn new(racks: usize, trays_per_rack: usize, down: &[bool]) -> Cluster {
        let total = racks * trays_per_rack;
        assert_eq!(down.len(), total);
        let state: Vec<TrayState> = down
            .iter()
            .map(|&d| if d { TrayState::Down } else { TrayState::Free })
            .collect();
        let n_down = down.iter().filter(|&&d| d).count();
        let down_in_rack = down
            .chunks(trays_per_rack.max(1))
            .map(|rack| rack.iter().filter(|&&d| d).count() as u32)
            .collect();
        Cluster {
            racks,
            trays_per_rack,
            free: FreeMap::new(
                &down.iter().map(|&d| !d).collect::<Vec<bool>>(),
                trays_per_rack,
            ),
            state,
            n_busy: 0,
            n_down,
            down_in_rack,
        }
    }

    pub fn total(&self) -> usize {
        self.state.len()
    }

    pub fn free_map(&self) -> &FreeMap {
        &self.free
    }

    /// Unavailable trays per rack.
    pub fn down_in_racks(&self) -> &[u32] {
        &self.down_in_rack
    }

    pub fn free_count(&self) -> usize {
        self.free.count()
    }

    pub fn busy_count(&self) -> usize {
        self.n_busy
    }

    pub fn down_count(&self) -> usize {
        self.n_down
    }

    pub fn healthy_count(&self) -> usize {
        self.total() - self.n_down
    }

    pub fn state(&self, tray: usize) -> TrayState {
        self.state[tray]
    }

    /// Gives `trays` to `job`. Panics if one of them is not free: two jobs on one tray is
    /// exactly the bug the simulator must never hide.
    pub fn allocate(&mut self, job: usize, trays: &[usize]) {
        for &t in trays {
            assert_eq!(
                self.state[t],
                TrayState::Free,
                "job {job} placed on tray {t}, which is not free"
            );
            self.state[t] = TrayState::Busy(job);
            self.free.set(t, false);
        }
        self.n_busy += trays.len();
    }

    /// Returns the trays of `job` (ended or killed) to the free pool.
    pub fn release(&mut self, job: usize, trays: &[usize]) {
        for &t in trays {
            assert_eq!(
                self.state[t],
                TrayState::Busy(job),
                "tray {t} not held by job {job}"
            );
            self.state[t] = TrayState::Free;
            self.free.set(t, true);
        }
        self.n_busy -= trays.len();
    }

    /// Marks a free tray unavailable; the caller first releases the job running on it.
    pub fn mark_down(&mut self, tray: usize) {
        assert_eq!(
            self.state[tray],
            TrayState::Free,
            "tray {tray} must be free to fail"
        );
        self.state[tray] = TrayState::Down;
        self.free.set(tray, false);
        self.down_in_rack[tray / self.trays_per_rack] += 1;
        self.n_down += 1;
    }

    /// A repaired tray becomes free.
    pub fn mark_up(&mut self, tray: usize) {
        assert_eq!(self.state[tray], TrayState::Down, "tray {tray} is not down");
        self.state[tray] = TrayState::Free;
        self.free.set(tray, true);
        self.n_down -= 1;
        self.down_in_rack[tray / self.trays_per_rack] -= 1;
    }

    /// `(rack, trays of the set in that rack)` for the racks the set touches, in rack order.
    pub fn per_rack(&self, trays: &[usize]) -> Vec<(usize, usize)> {
        let mut counts: Vec<(usize, usize)> = Vec::new();
        let mut racks: Vec<usize> = trays.iter().map(|t| t / self.trays_per_rack).collect();
        racks.sort_unstable();
        for r in racks {
            match counts.last_mut() {
                Some((last, c)) if *last == r => *c += 1,
                _ => counts.push((r, 1)),
            }
        }
        counts
    }

    /// Recounts everything: allocated + free + unavailable = total, and the free map agrees
    /// with the states.
    pub fn check(&self) -> Result<(), String> {
        let (mut free, mut busy, mut down) = (0, 0, 0);
        for (t, s) in self.state.iter().enumerate() {
            match s {
                TrayState::Free => free += 1,
                TrayState::Busy(_) => busy += 1,
                TrayState::Down => down += 1,
            }
            if self.free.is_free(t) != (*s == TrayState::Free) {
                return Err(format!("free map disagrees with tray {t} ({s:?})"));
            }
        }
        let counters = (self.free.count(), self.n_busy, self.n_down);
        if (free, busy, down) != counters {
            return Err(format!(
                "counters {counters:?} but trays say {:?}",
                (free, busy, down)
            ));
        }
        let down_in_rack: Vec<u32> = self
            .state
            .chunks(self.trays_per_rack)
            .map(|rack| rack.iter().filter(|&&s| s == TrayState::Down).count() as u32)
            .collect();
        if down_in_rack != self.down_in_rack {
            return Err("the unavailable trays per rack are miscounted".into());
        }
        if FreeMap::new(self.free.as_slice(), self.trays_per_rack) != self.free {
            return Err("the free map's count or fingerprint is stale".into());
        }
        if free + busy + down != self.total() {
            return Err(format!(
                "{free} free + {busy} busy + {down} down != {} trays",
                self.total()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trays_move_between_states_and_are_counted() {
        let mut down = vec![false; 36];
        down[0] = true;
        let mut c = Cluster::new(2, 18, &down);
        assert_eq!((c.free_count(), c.busy_count(), c.down_count()), (35, 0, 1));
        c.allocate(7, &[1, 2, 20]);
        assert_eq!(c.per_rack(&[1, 2, 20]), vec![(0, 2), (1, 1)]);
        assert_eq!(c.state(20), TrayState::Busy(7));
        c.release(7, &[1, 2, 20]);
        c.mark_down(5);
        c.mark_up(0);
        assert_eq!((c.free_count(), c.busy_count(), c.down_count()), (35, 0, 1));
        c.check().unwrap();
    }

    #[test]
    #[should_panic(expected = "not free")]
    fn double_allocation_panics() {
        let mut c = Cluster::new(1, 18, &[false; 18]);
        c.allocate(1, &[3]);
        c.allocate(2, &[3]);
    }
}
