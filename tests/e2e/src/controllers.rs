//! Two controllers over one StateSaveLocation (lab-up.sh's `BACKUP_CTLD=1`): ctl1, the
//! primary, with the lab's own pid file and log, and ctl2, the backup, with its own under
//! `var/ctl2/`.

use super::Lab;

impl Lab {
    /// The backup's pid while it is alive in this lab's chroot.
    pub fn backup_pid(&self) -> Option<u32> {
        self.live_pid(&self.dir.join("var/ctl2/run/slurmctld.pid"))
    }

    /// The backup's slurmctld.log.
    pub fn backup_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("var/ctl2/log/slurmctld.log")).unwrap_or_default()
    }

    /// `scontrol ping` says the controller named `ctl` is UP, and squeue answers.
    pub fn in_control(&self, ctl: &str) -> bool {
        let ping = self.sl(&["scontrol", "ping"]);
        String::from_utf8_lossy(&ping.stdout).contains(&format!("at {ctl} is UP"))
            && self.sl(&["squeue", "-h"]).status.success()
    }
}
