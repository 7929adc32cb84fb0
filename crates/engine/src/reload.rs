//! What a process does with a topology file it must refuse (broken, or naming nodes
//! slurm.conf does not define). `topology_p_build_config` returns an `int` that Slurm
//! ignores, so the plugin decides, by the role of the process.
#![forbid(unsafe_code)]

/// The process that loads the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A new slurmctld exec'd by `scontrol reconfigure`, in its first load: its parent waits
    /// for it and resumes with its own racks if it exits ("Resuming operation, reconfigure
    /// failed."). Slurm sets `SLURMCTLD_RECONF_PARENT_FD` for it and never unsets it, so a
    /// later load of the same process (a backup that hands control back and takes over
    /// again) is a [`Role::Controller`]: nobody waits for it then.
    ReconfigureChild,
    /// Any other load in slurmctld: a start, a takeover by a backup controller.
    Controller,
    /// slurmd, slurmstepd and the clients: racks only name `SLURM_TOPOLOGY_ADDR` there.
    Other,
}

impl Role {
    /// The role of a load: `in_slurmctld`, `reconfigure_env` (`SLURMCTLD_RECONF_PARENT_FD` is
    /// set) and whether this is the process's first load.
    pub fn of(in_slurmctld: bool, reconfigure_env: bool, first_load: bool) -> Role {
        match (in_slurmctld, reconfigure_env && first_load) {
            (false, _) => Role::Other,
            (true, true) => Role::ReconfigureChild,
            (true, false) => Role::Controller,
        }
    }
}

/// What happens to a refused file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// `fatal()`: the waiting parent keeps running with its racks.
    ExitForParent,
    /// Place jobs by the last good copy in StateSaveLocation (`fatal()` without one, as Slurm
    /// does for a broken topology.conf at a first start).
    LastGood,
    /// Carry on without racks.
    NoRacks,
}

pub fn on_refusal(role: Role) -> OnRefusal {
    match role {
        Role::ReconfigureChild => OnRefusal::ExitForParent,
        Role::Controller => OnRefusal::LastGood,
        Role::Other => OnRefusal::NoRacks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_reconfigure_childs_first_load_exits() {
        assert_eq!(Role::of(true, true, true), Role::ReconfigureChild);
        assert_eq!(
            on_refusal(Role::of(true, true, true)),
            OnRefusal::ExitForParent
        );
    }

    /// Issue 36: a backup born from a reconfigure that takes over again later must not exit
    /// in the middle of the failover.
    #[test]
    fn a_takeover_by_a_controller_born_from_a_reconfigure_uses_the_last_good_racks() {
        assert_eq!(on_refusal(Role::of(true, true, false)), OnRefusal::LastGood);
    }

    #[test]
    fn a_start_uses_the_last_good_racks_and_slurmd_goes_on_without() {
        assert_eq!(on_refusal(Role::of(true, false, true)), OnRefusal::LastGood);
        assert_eq!(on_refusal(Role::of(false, true, true)), OnRefusal::NoRacks);
        assert_eq!(
            on_refusal(Role::of(false, false, false)),
            OnRefusal::NoRacks
        );
    }
}
