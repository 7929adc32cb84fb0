//! What one tray holds at the moment of a decision ([`Tray`]), what a rack's offered trays hold
//! together ([`RackTally`], [`Holding`]) and what a whole free tray offers ([`Capacity`]):
//! plain values, read by the topology, the view and the free index alike.

/// What one tray looks like at the moment a job is being placed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Tray {
    /// The scheduler offers this tray to the job (free, and not excluded by the request).
    pub offered: bool,
    /// DOWN, DRAIN, FAIL or not responding: it does not count as healthy capacity.
    pub unavailable: bool,
    /// Some other job runs on it.
    pub allocated: bool,
    /// GPUs of the kind the job asks for that it could use here (Slurm's `avail_gpus`).
    pub gpus: u16,
    /// CPUs the job could use here (Slurm's `avail_cpus`, after memory and task limits).
    pub cpus: u16,
}

/// What a rack's offered trays hold of one resource (GPUs or CPUs): the total, and the least
/// and most on one tray. When the least is the most (whole free trays, the usual case), the
/// fewest trays that add up to a demand is one division.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holding {
    pub total: u64,
    pub least: u16,
    pub most: u16,
}

/// No trays yet: the least is above any tray's.
impl Default for Holding {
    fn default() -> Holding {
        Holding {
            total: 0,
            least: u16::MAX,
            most: 0,
        }
    }
}

impl Holding {
    #[inline]
    pub fn add(&mut self, v: u16) {
        self.total += u64::from(v);
        self.least = self.least.min(v);
        self.most = self.most.max(v);
    }

    /// Adds what `other` holds.
    #[inline]
    pub fn merge(&mut self, other: &Holding) {
        self.total += other.total;
        self.least = self.least.min(other.least);
        self.most = self.most.max(other.most);
    }
}

/// One rack's offered trays for one job, and the GPUs and CPUs they hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RackTally {
    pub offered: usize,
    pub gpus: Holding,
    pub cpus: Holding,
}

impl RackTally {
    /// Counts `t` when it is offered.
    #[inline]
    pub fn add(&mut self, t: Tray) {
        if t.offered {
            self.offered += 1;
            self.gpus.add(t.gpus);
            self.cpus.add(t.cpus);
        }
    }

    /// The tally of `trays`: [`RackTally::add`] for each, without a branch per tray (the
    /// plugin counts every rack that offers a tray on every call).
    pub fn of_trays(trays: &[Tray]) -> RackTally {
        let (mut offered, mut gpus, mut cpus) = (0usize, 0u64, 0u64);
        let (mut least_gpus, mut most_gpus) = (u16::MAX, 0u16);
        let (mut least_cpus, mut most_cpus) = (u16::MAX, 0u16);
        for t in trays {
            // All ones for an offered tray, else zero.
            let on = u16::from(t.offered).wrapping_neg();
            offered += usize::from(t.offered);
            gpus += u64::from(t.gpus & on);
            cpus += u64::from(t.cpus & on);
            least_gpus = least_gpus.min(t.gpus | !on);
            most_gpus = most_gpus.max(t.gpus & on);
            least_cpus = least_cpus.min(t.cpus | !on);
            most_cpus = most_cpus.max(t.cpus & on);
        }
        RackTally {
            offered,
            gpus: Holding {
                total: gpus,
                least: least_gpus,
                most: most_gpus,
            },
            cpus: Holding {
                total: cpus,
                least: least_cpus,
                most: most_cpus,
            },
        }
    }

    /// Adds another rack's tally.
    #[inline]
    pub fn merge(&mut self, other: &RackTally) {
        self.offered += other.offered;
        self.gpus.merge(&other.gpus);
        self.cpus.merge(&other.cpus);
    }
}

/// What a whole, free, healthy tray offers a job: the yardstick for "does this job fit one
/// rack at all", independent of what is busy right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    pub gpus: u16,
    pub cpus: u16,
}

impl Capacity {
    /// A GB200 compute tray: 4 Blackwell GPUs and two 72-core Grace CPUs.
    pub const GB200_TRAY: Capacity = Capacity { gpus: 4, cpus: 144 };
}

impl Tray {
    /// A free tray offering `cap` to the job.
    pub fn free(cap: Capacity) -> Tray {
        Tray {
            offered: true,
            gpus: cap.gpus,
            cpus: cap.cpus,
            ..Tray::default()
        }
    }
}
