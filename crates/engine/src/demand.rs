//! What a job needs besides a node count, as totals over the whole job.
//!
//! Most ML users do not write `-N`: they write `--gpus=8`, `-n 16 --gpus-per-task=1` or
//! `-n 32 -c 4`. Slurm then leaves the node minimum at 1 and lets the selection decide how
//! many nodes the job takes. Racks ranked on that minimum would all look alike; ranked on
//! these totals, a `--gpus=8` job is seen as the two trays it really takes.
#![forbid(unsafe_code)]

use std::fmt;

use crate::tray::Capacity;

/// The totals a job asks for. The plugin derives them from the job record ([`JobShape`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Demand {
    /// GPUs over the whole job (`--gpus`, or `--gpus-per-task` times the tasks); 0: none.
    /// Per-node GPU requests are not counted: Slurm only offers trays that meet them.
    pub gpus: u64,
    /// CPUs over the whole job (Slurm's `min_cpus`: tasks times CPUs per task).
    pub cpus: u64,
    /// The fewest trays the task layout allows (`-n` over `--ntasks-per-node`); 0: no limit.
    pub trays: usize,
}

impl Demand {
    /// Can this demand need more trays than `min_nodes`? If not, counting trays is enough.
    pub fn binds(&self, min_nodes: usize) -> bool {
        self.gpus > 0 || self.cpus > min_nodes as u64 || self.trays > min_nodes
    }

    /// Trays this demand needs when every tray offers `cap` (whole free trays).
    pub fn trays_at(&self, cap: Capacity) -> usize {
        let per = |total: u64, each: u16| match each {
            0 => 0, // the tray offers none: Slurm's own checks decide
            each => usize::try_from(total.div_ceil(u64::from(each))).unwrap_or(usize::MAX),
        };
        self.trays
            .max(per(self.gpus, cap.gpus))
            .max(per(self.cpus, cap.cpus))
    }
}

impl fmt::Display for Demand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gpus={} cpus={}", self.gpus, self.cpus)?;
        if self.trays > 0 {
            write!(f, " task-trays={}", self.trays)?;
        }
        Ok(())
    }
}

/// The fields of a Slurm job record that size a job, read by the plugin without allocating
/// (this runs on every evaluation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobShape {
    /// GPUs in `tres_per_job` (`--gpus=8`: `gres/gpu:8`); see [`gpus_in_tres`].
    pub gpus_per_job: u64,
    /// GPUs in `tres_per_task` (`--gpus-per-task=1`: `cpu=4,gres/gpu=1`).
    pub gpus_per_task: u64,
    /// `num_tasks` (`-n`); 0 when not given.
    pub num_tasks: u32,
    /// `ntasks_per_node`; 0 when not given.
    pub ntasks_per_node: u32,
    /// `min_cpus`: CPUs over the whole job as Slurm computed them.
    pub min_cpus: u32,
}

impl JobShape {
    /// The job's totals.
    pub fn demand(&self) -> Demand {
        let tasks = u64::from(self.num_tasks);
        let gpus = if self.gpus_per_job > 0 {
            self.gpus_per_job
        } else {
            self.gpus_per_task.saturating_mul(tasks)
        };
        Demand {
            gpus,
            cpus: u64::from(self.min_cpus),
            trays: self.task_trays(),
        }
    }

    /// The node maximum Slurm's selection works with: `common_topo_choose_nodes` lowers it to
    /// the task count (without `--ntasks-per-node`) before any callback runs. Applying the
    /// same cap when the request is first read keeps the submission-time check and the
    /// callbacks in agreement (e.g. `-n 8 --gpus=8 -w` nodes in two racks fits one rack).
    pub fn max_nodes(&self, min_nodes: usize, max_nodes: usize) -> usize {
        let tasks = self.num_tasks as usize;
        if tasks > 0 && self.ntasks_per_node == 0 && max_nodes > tasks {
            tasks.max(min_nodes)
        } else {
            max_nodes
        }
    }

    fn task_trays(&self) -> usize {
        match (self.num_tasks, self.ntasks_per_node) {
            (t, p) if t > 0 && p > 0 => t.div_ceil(p) as usize,
            _ => 0,
        }
    }

    /// Where the totals came from, for the decision log (allocates: only when logged).
    pub fn explain(&self) -> String {
        let mut why = Vec::new();
        if self.gpus_per_job > 0 {
            why.push(format!("gpus={} per job", self.gpus_per_job));
        } else if self.gpus_per_task > 0 && self.num_tasks > 0 {
            why.push(format!(
                "gpus={}/task x {} tasks",
                self.gpus_per_task, self.num_tasks
            ));
        }
        if self.task_trays() > 0 {
            why.push(format!(
                "trays>={} from {} tasks/{} per node",
                self.task_trays(),
                self.num_tasks,
                self.ntasks_per_node
            ));
        }
        if self.min_cpus > 1 {
            why.push(format!("cpus={}", self.min_cpus));
        }
        if why.is_empty() {
            "node count only".into()
        } else {
            why.join(", ")
        }
    }
}

/// GPUs named in a Slurm TRES string: `gres/gpu:8`, `gres/gpu:h100:8`, `cpu=4,gres/gpu=1`
/// (Slurm writes both `:` and `=`). A `gres/gpu` entry without a count means one GPU; typed
/// entries add up.
pub fn gpus_in_tres(tres: &str) -> u64 {
    tres.split(',')
        .map(str::trim)
        .filter(|e| e == &"gres/gpu" || e.starts_with("gres/gpu:") || e.starts_with("gres/gpu="))
        .map(|e| {
            let last = e.rsplit([':', '=']).next().unwrap_or("");
            if e == "gres/gpu" || last == e {
                1
            } else {
                // A typed entry without a count (`gres/gpu:h100`) is one GPU of that type.
                last.parse().unwrap_or(1)
            }
        })
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_counts_in_every_tres_spelling() {
        assert_eq!(gpus_in_tres("gres/gpu:8"), 8);
        assert_eq!(gpus_in_tres("gres/gpu=1"), 1);
        assert_eq!(gpus_in_tres("cpu=4,gres/gpu=1"), 1);
        assert_eq!(gpus_in_tres("gres/gpu:h100:8"), 8);
        assert_eq!(gpus_in_tres("gres/gpu:a100:2,gres/gpu:h100:2"), 4);
        assert_eq!(gpus_in_tres("gres/gpu"), 1);
        assert_eq!(gpus_in_tres("gres/gpu:h100"), 1);
        assert_eq!(gpus_in_tres("cpu=4"), 0);
        assert_eq!(gpus_in_tres("gres/gpuX:4,license/x:2"), 0);
        assert_eq!(gpus_in_tres(""), 0);
    }

    #[test]
    fn demand_of_each_request_style() {
        // sbatch --gpus=8 --exclusive
        let shape = JobShape {
            gpus_per_job: gpus_in_tres("gres/gpu:8"),
            min_cpus: 1,
            ..JobShape::default()
        };
        assert_eq!((shape.demand().gpus, shape.demand().trays), (8, 0));
        assert_eq!(shape.explain(), "gpus=8 per job");
        // sbatch -n 16 -c 4 --gpus-per-task=1
        let shape = JobShape {
            gpus_per_task: gpus_in_tres("cpu=4,gres/gpu=1"),
            num_tasks: 16,
            min_cpus: 64,
            ..JobShape::default()
        };
        assert_eq!((shape.demand().gpus, shape.demand().cpus), (16, 64));
        assert_eq!(shape.explain(), "gpus=1/task x 16 tasks, cpus=64");
        // sbatch -n 32 --ntasks-per-node=4 --gpus-per-node=4
        let shape = JobShape {
            num_tasks: 32,
            ntasks_per_node: 4,
            min_cpus: 32,
            ..JobShape::default()
        };
        assert_eq!((shape.demand().gpus, shape.demand().trays), (0, 8));
        assert_eq!(
            shape.explain(),
            "trays>=8 from 32 tasks/4 per node, cpus=32"
        );
        // sbatch -N 4: nothing beyond the node count
        let shape = JobShape {
            min_cpus: 4,
            num_tasks: 4,
            ..JobShape::default()
        };
        assert!(!shape.demand().binds(4));
        assert_eq!(JobShape::default().explain(), "node count only");
    }

    #[test]
    fn node_maximum_is_capped_at_the_tasks_like_slurm() {
        let shape = |num_tasks, ntasks_per_node| JobShape {
            num_tasks,
            ntasks_per_node,
            ..JobShape::default()
        };
        assert_eq!(shape(8, 0).max_nodes(1, 500_000), 8);
        assert_eq!(shape(8, 0).max_nodes(10, 500_000), 10);
        assert_eq!(shape(8, 4).max_nodes(2, 500_000), 500_000);
        assert_eq!(shape(0, 0).max_nodes(1, 500_000), 500_000);
        assert_eq!(shape(8, 0).max_nodes(2, 4), 4);
    }

    #[test]
    fn trays_on_whole_trays() {
        let cap = Capacity::GB200_TRAY;
        let d = |gpus, cpus, trays| Demand { gpus, cpus, trays };
        assert_eq!(d(8, 1, 0).trays_at(cap), 2);
        assert_eq!(d(9, 1, 0).trays_at(cap), 3);
        assert_eq!(d(0, 1000, 0).trays_at(cap), 7);
        assert_eq!(d(4, 1, 5).trays_at(cap), 5);
        assert_eq!(d(8, 1, 0).trays_at(Capacity { gpus: 0, cpus: 144 }), 1);
    }
}
