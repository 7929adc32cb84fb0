//! Preemption tiers for a workload that has none (issue 52): one documented rule, so a
//! synthetic mix or a trace becomes a preemption workload without a new file format.
//!
//! `--high-tier-from N`: every job of at least N trays is the high tier (level 1, not
//! preemptable) and may preempt any smaller job, which is the low tier (level 0,
//! preemptable). With N = 18 on the synthetic mix, the low tier is the many mixed-size jobs
//! that fill the racks (1 to 16 trays, 72% of the jobs) and the high tier the stream of
//! whole-rack and multi-rack jobs (18, 32-72 and 144+ trays): the case issue 52 is about, a
//! site whose most valuable jobs need whole NVLink domains. On a trace the same rule reads
//! "jobs of at least 4N GPUs run in the high partition". Without the rule every job stays at
//! the default tier and nothing is preempted: existing workloads run as before. A site's
//! history can take its own tiers from its partitions or QOS instead ([`super::site_tiers`]).

use crate::job::{Job, Tier};

/// The high tier: jobs of at least this many trays.
pub fn high_tier_from(jobs: &mut [Job], trays: usize) {
    for j in jobs {
        j.tier = if j.trays >= trays {
            Tier {
                level: 1,
                preemptable: false,
            }
        } else {
            Tier {
                level: 0,
                preemptable: true,
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_of_a_rack_or_more_are_high_and_smaller_ones_are_preemptable() {
        let mut jobs: Vec<Job> = [4, 17, 18, 36]
            .iter()
            .enumerate()
            .map(|(i, &t)| Job::plain(i, 0, t, 1, 1))
            .collect();
        high_tier_from(&mut jobs, 18);
        let tiers: Vec<(u32, bool)> = jobs
            .iter()
            .map(|j| (j.tier.level, j.tier.preemptable))
            .collect();
        assert_eq!(tiers, [(0, true), (0, true), (1, false), (1, false)]);
        assert!(jobs[2].tier.preempts(jobs[0].tier));
        assert!(!jobs[0].tier.preempts(jobs[2].tier));
        assert!(
            !jobs[3].tier.preempts(jobs[2].tier),
            "one tier never preempts itself"
        );
    }
}
