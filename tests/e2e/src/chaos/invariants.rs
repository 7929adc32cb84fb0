//! The storm's invariants, each checked from Slurm's own records after every step: no tray
//! gives out more than it has or one GPU or core twice, every running job inside the racks
//! the plugin promises, every job sbatch accepted still known to Slurm (running, pending with
//! a reason, or finished), and no job ended by anyone but the storm.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::records::{Held, JobRecord, NodeRecord, QueueLine};
use super::requests::Rule;
use crate::TRAYS;

/// No node gives out more CPUs or GPUs than it has, and no CPU id or GPU index is held by
/// two running jobs on one node.
pub fn nothing_double_booked(jobs: &[JobRecord], nodes: &[NodeRecord]) -> Vec<String> {
    let mut found = Vec::new();
    for n in nodes {
        if n.cpus_given > n.cpus || n.gpus_given > n.gpus {
            found.push(format!(
                "{}: CPUAlloc={} of {}, GPUs given {} of {}",
                n.name, n.cpus_given, n.cpus, n.gpus_given, n.gpus
            ));
        }
    }
    let mut holder: HashMap<(&str, &str, u32), u32> = HashMap::new();
    for job in jobs.iter().filter(|j| j.state == "RUNNING") {
        for (node, Held { cpus, gpus }) in &job.held {
            let units = cpus
                .iter()
                .map(|c| ("cpu", *c))
                .chain(gpus.iter().map(|g| ("gpu", *g)));
            for (kind, unit) in units {
                if let Some(other) = holder.insert((node, kind, unit), job.id) {
                    found.push(format!(
                        "{node}: {kind} {unit} held by jobs {other} and {}",
                        job.id
                    ));
                }
            }
        }
    }
    found
}

/// Every running record inside the racks its request allows (`rules` by the id sbatch
/// returned; records of jobs the storm did not submit are not judged).
pub fn inside_allowed_racks(
    jobs: &[JobRecord],
    rules: &HashMap<u32, Rule>,
    rack_of: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut found = Vec::new();
    for job in jobs
        .iter()
        .filter(|j| j.state == "RUNNING" && !j.nodes.is_empty())
    {
        let Some(&rule) = rules.get(&job.submitted_as) else {
            continue;
        };
        let mut per_rack: BTreeMap<&str, usize> = BTreeMap::new();
        for node in &job.nodes {
            let rack = rack_of.get(node).map_or("(no rack)", String::as_str);
            *per_rack.entry(rack).or_default() += 1;
        }
        let n = job.nodes.len();
        let broken = match rule {
            Rule::Lifted => false,
            // A pending job resized below its segment runs as if it had none (26.05, as its
            // topology/block; 24.11 never starts it).
            Rule::Segments(s) if n < s => per_rack.len() > 1,
            Rule::Segments(s) => per_rack.values().any(|&k| k % s != 0),
            Rule::FewestRacks => per_rack.len() > n.div_ceil(TRAYS),
        };
        if broken {
            found.push(format!(
                "job {} ({:?}, {n} trays) runs on {per_rack:?}",
                job.id, rule
            ));
        }
    }
    found
}

/// Every job sbatch accepted is in Slurm's records; a pending one says why it waits; one
/// that ended CANCELLED was cancelled by the storm.
pub fn every_job_accounted_for(
    accepted: &BTreeSet<u32>,
    cancelled: &BTreeSet<u32>,
    queue: &[QueueLine],
) -> Vec<String> {
    let mut found = Vec::new();
    let known: BTreeSet<u32> = queue.iter().map(|q| q.submitted_as).collect();
    for id in accepted.difference(&known) {
        found.push(format!(
            "job {id} was accepted and Slurm no longer knows it"
        ));
    }
    for q in queue.iter().filter(|q| accepted.contains(&q.submitted_as)) {
        if q.state == "PENDING" && matches!(q.reason.as_str(), "" | "(null)") {
            found.push(format!("job {} pending without a reason", q.submitted_as));
        }
        if q.state == "CANCELLED" && !cancelled.contains(&q.submitted_as) {
            found.push(format!(
                "job {} CANCELLED, not by the storm",
                q.submitted_as
            ));
        }
    }
    found
}

/// Every pending job still has the batch script it will run: slurmctld keeps it in
/// StateSaveLocation under the id sbatch returned (an array task and a hetjob component run
/// their array's or leader's script) and dies when it starts a job whose script is gone
/// ("Unable to load job batch script"). `has_script` says whether that id's file exists.
pub fn pending_jobs_keep_their_scripts(
    jobs: &[JobRecord],
    has_script: impl Fn(u32) -> bool,
) -> Vec<String> {
    let pending: BTreeSet<u32> = jobs
        .iter()
        .filter(|j| j.state == "PENDING")
        .map(|j| j.submitted_as)
        .collect();
    pending
        .into_iter()
        .filter(|&id| !has_script(id))
        .map(|id| format!("job {id} is pending and its batch script is gone"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(id: u32, nodes: &[&str], gpus: &[u32]) -> JobRecord {
        JobRecord {
            id,
            submitted_as: id,
            state: "RUNNING".into(),
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            held: nodes
                .iter()
                .map(|n| {
                    let held = Held {
                        cpus: BTreeSet::new(),
                        gpus: gpus.iter().copied().collect(),
                    };
                    (n.to_string(), held)
                })
                .collect(),
        }
    }

    fn racks() -> BTreeMap<String, String> {
        (1..=36)
            .map(|i| (format!("gb{i:03}"), format!("rack{}", 1 + (i - 1) / 18)))
            .collect()
    }

    #[test]
    fn a_gpu_held_by_two_running_jobs_is_a_violation() {
        let jobs = [
            running(1, &["gb001"], &[0, 1]),
            running(2, &["gb001"], &[1, 2]),
        ];
        let found = nothing_double_booked(&jobs, &[]);
        assert_eq!(found, ["gb001: gpu 1 held by jobs 1 and 2"]);
    }

    #[test]
    fn a_job_that_fits_a_rack_may_not_span_two() {
        let rules = HashMap::from([(1, Rule::FewestRacks), (2, Rule::Lifted)]);
        let jobs = [
            running(1, &["gb018", "gb019"], &[]),
            running(2, &["gb018", "gb019"], &[]),
        ];
        let found = inside_allowed_racks(&jobs, &rules, &racks());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("job 1 "), "{found:?}");
    }

    #[test]
    fn segments_may_share_racks_but_not_be_cut() {
        let rules = HashMap::from([(1, Rule::Segments(2)), (2, Rule::Segments(2))]);
        let whole = running(1, &["gb017", "gb018", "gb019", "gb020"], &[]);
        let cut = running(2, &["gb016", "gb017", "gb018", "gb019"], &[]);
        let found = inside_allowed_racks(&[whole, cut], &rules, &racks());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("job 2 "), "{found:?}");
    }

    #[test]
    fn a_job_resized_below_its_segment_is_held_to_one_rack() {
        let rules = HashMap::from([(1, Rule::Segments(6)), (2, Rule::Segments(6))]);
        let one = running(1, &["gb001"], &[]);
        let split = running(2, &["gb018", "gb019"], &[]);
        let found = inside_allowed_racks(&[one, split], &rules, &racks());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("job 2 "), "{found:?}");
    }

    #[test]
    fn a_pending_array_task_whose_array_script_is_gone_is_a_violation() {
        let mut task = running(12, &[], &[]);
        task.state = "PENDING".into();
        task.submitted_as = 10;
        let finished_meta = running(10, &["gb001"], &[0]);
        let found = pending_jobs_keep_their_scripts(&[task.clone(), finished_meta], |id| id != 10);
        assert_eq!(found, ["job 10 is pending and its batch script is gone"]);
        assert!(pending_jobs_keep_their_scripts(&[task], |id| id == 10).is_empty());
    }

    #[test]
    fn a_lost_job_and_a_stray_cancel_are_violations() {
        let accepted = BTreeSet::from([1, 2, 3]);
        let queue = super::super::records::queue_lines("1|CANCELLED|None\n2|PENDING|\n");
        let found = every_job_accounted_for(&accepted, &BTreeSet::new(), &queue);
        assert_eq!(found.len(), 3, "{found:?}");
    }
}
