//! Editing the lab's topology.toml as an admin would: racks in another order or with other
//! nodes, then `scontrol reconfigure`.

use super::Lab;

impl Lab {
    /// Writes topology.toml with `racks` (name, host list) in that order, keeping what
    /// lab-up.sh wrote before the racks (counts and `[policy]`); returns the file as it was.
    /// `Lab::claim` (lab-up.sh) writes the lab's own racks back for the next test.
    pub fn write_racks(&self, racks: &[(&str, &str)]) -> String {
        let path = self.etc("topology.toml");
        let good = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (this test edits the plugin's racks; E2E_TOPO={})",
                path.display(),
                super::topo_under_test()
            )
        });
        let head = &good[..good
            .find("[[rack]]")
            .unwrap_or_else(|| panic!("no [[rack]] in {good}"))];
        let mut edited = head.to_string();
        for (name, nodes) in racks {
            edited.push_str(&format!(
                "[[rack]]\nname = \"{name}\"\nnodes = \"{nodes}\"\n\n"
            ));
        }
        let tmp = path.with_extension("toml.e2e-new");
        std::fs::write(&tmp, &edited).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        good
    }

    /// The 1-based line of the lab's topology.toml that contains `needle`.
    pub fn topology_line(&self, needle: &str) -> usize {
        let text = std::fs::read_to_string(self.etc("topology.toml")).unwrap();
        1 + text
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in topology.toml:\n{text}"))
    }

    /// `scontrol reconfigure`, then waits until slurmctld.log shows `line` after byte offset
    /// `from` and slurmctld answers again. Returns whether scontrol reported success.
    pub fn reconfigure_until(&self, from: usize, line: &str) -> bool {
        let reconf = self.sl(&["scontrol", "reconfigure"]);
        self.wait_up_to(120, &format!("`{line}` in slurmctld.log"), || {
            self.ctld_log_since(from).contains(line)
        });
        self.wait_up_to(120, "slurmctld to answer after the reconfigure", || {
            self.ctld_up()
        });
        reconf.status.success()
    }

    /// `scontrol -o show node NODE`'s `KEY=value` fields that say what jobs hold on it.
    pub fn node_allocation(&self, node: &str) -> String {
        let out = self.run(&["scontrol", "-o", "show", "node", node]);
        let fields: Vec<&str> = out
            .split_whitespace()
            .filter(|f| {
                ["CPUAlloc=", "AllocMem=", "AllocTRES=", "GresUsed="]
                    .iter()
                    .any(|k| f.starts_with(k))
            })
            .collect();
        fields.join(" ")
    }

    /// The per-node lines of `scontrol show job -d` (`Nodes=... CPU_IDs=... GRES=...(IDX:..)`):
    /// which cores and GPU indices the job holds on each node.
    pub fn job_detail(&self, job: u32) -> Vec<String> {
        let out = self.run(&["scontrol", "show", "job", "-d", &job.to_string()]);
        out.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("Nodes=") && l.contains("CPU_IDs="))
            .map(str::to_string)
            .collect()
    }
}
