//! What Slurm's own records say, read for the storm's invariants: each job record of
//! `scontrol show job -d` (with the cores and GPU indices it holds on each node), each node's
//! capacity, every job `squeue -t all` still knows, and the racks in force from
//! `scontrol show topology`.

use std::collections::{BTreeMap, BTreeSet};

use nvl72_engine::hostlist;

/// One job record: an array task or a hetjob component is a record of its own.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: u32,
    /// The id sbatch returned: `ArrayJobId` or `HetJobId` when the record has one.
    pub submitted_as: u32,
    pub state: String,
    pub nodes: Vec<String>,
    /// Per node, the CPU ids and GPU indices the job holds there.
    pub held: BTreeMap<String, Held>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub cpus: BTreeSet<u32>,
    pub gpus: BTreeSet<u32>,
}

/// Splits `scontrol show job -d` into its job records.
pub fn job_records(text: &str) -> Result<Vec<JobRecord>, String> {
    let mut records = Vec::new();
    let mut block = String::new();
    for line in text.lines() {
        if line.starts_with("JobId=") && !block.is_empty() {
            records.push(job_record(&block)?);
            block.clear();
        }
        block.push_str(line);
        block.push('\n');
    }
    if block.contains("JobId=") {
        records.push(job_record(&block)?);
    }
    Ok(records)
}

fn job_record(block: &str) -> Result<JobRecord, String> {
    let field = |key: &str| crate::show_field(block, key);
    let number = |key: &str| field(key).parse::<u32>().ok();
    let id = number("JobId").ok_or_else(|| format!("no JobId in\n{block}"))?;
    let submitted_as = number("ArrayJobId")
        .or_else(|| number("HetJobId"))
        .unwrap_or(id);
    let nodes = match field("NodeList").as_str() {
        "" | "(null)" => Vec::new(),
        list => expand(list)?,
    };
    let mut held = BTreeMap::new();
    for line in block.lines().map(str::trim) {
        if !(line.starts_with("Nodes=") && line.contains("CPU_IDs=")) {
            continue;
        }
        let on = expand(&crate::show_field(line, "Nodes"))?;
        let cpus = ids(&crate::show_field(line, "CPU_IDs"))?;
        let gpus = match line.split_once("IDX:") {
            Some((_, rest)) => ids(rest.split(')').next().unwrap_or_default())?,
            None => BTreeSet::new(),
        };
        for node in on {
            held.insert(
                node,
                Held {
                    cpus: cpus.clone(),
                    gpus: gpus.clone(),
                },
            );
        }
    }
    Ok(JobRecord {
        id,
        submitted_as,
        state: field("JobState"),
        nodes,
        held,
    })
}

fn expand(list: &str) -> Result<Vec<String>, String> {
    hostlist::expand(list).map_err(|e| format!("node list `{list}`: {e}"))
}

/// `0-3,6` (Slurm's CPU_IDs and GRES IDX lists) as a set; `N/A` or empty as none.
fn ids(list: &str) -> Result<BTreeSet<u32>, String> {
    let mut set = BTreeSet::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "N/A" {
            continue;
        }
        let bad = || format!("id list `{list}`");
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        set.extend(a..=b);
    }
    Ok(set)
}

/// A node's capacity and what Slurm counts as given out on it (`scontrol -o show node`).
#[derive(Debug, Clone)]
pub struct NodeRecord {
    pub name: String,
    pub cpus: u32,
    pub cpus_given: u32,
    pub gpus: u32,
    pub gpus_given: u32,
}

pub fn node_records(text: &str) -> Vec<NodeRecord> {
    text.lines()
        .filter(|l| l.starts_with("NodeName="))
        .map(|l| {
            let number = |key: &str| crate::show_field(l, key).parse().unwrap_or(0);
            NodeRecord {
                name: crate::show_field(l, "NodeName"),
                cpus: number("CPUTot"),
                cpus_given: number("CPUAlloc"),
                gpus: gres_count(&crate::show_field(l, "Gres")),
                gpus_given: gres_count(&crate::show_field(l, "GresUsed")),
            }
        })
        .collect()
}

/// `gpu:4`, `gpu:nvidia:4(S:0)` or `gpu:2(IDX:0-1)`: the count of GPUs.
fn gres_count(gres: &str) -> u32 {
    gres.split(',')
        .filter(|g| g.starts_with("gpu"))
        .filter_map(|g| g.split('(').next()?.rsplit(':').next()?.parse::<u32>().ok())
        .sum()
}

/// One line of `squeue -h -t all -o %i|%T|%r`: the id sbatch returned, state and reason.
#[derive(Debug, Clone)]
pub struct QueueLine {
    pub submitted_as: u32,
    pub state: String,
    pub reason: String,
}

/// `123`, `123_4`, `123_[5-7]` or `123+1` are all job 123 as sbatch returned it.
pub fn queue_lines(text: &str) -> Vec<QueueLine> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().split('|');
            let id = f.next()?;
            let digits: String = id.chars().take_while(char::is_ascii_digit).collect();
            Some(QueueLine {
                submitted_as: digits.parse().ok()?,
                state: f.next()?.to_string(),
                reason: f.next().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// The racks in force, `scontrol show topology`'s `RackName=… Nodes=…` lines (topology/block's
/// `BlockName=`, for the storm without the plugin): rack name by node.
pub fn racks_in_force(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut rack_of = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        let mut name = crate::show_field(line, "RackName");
        if name.is_empty() {
            name = crate::show_field(line, "BlockName");
        }
        if name.is_empty() {
            continue;
        }
        for node in expand(&crate::show_field(line, "Nodes"))? {
            rack_of.insert(node, name.clone());
        }
    }
    Ok(rack_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOW_JOB: &str = "JobId=7 ArrayJobId=5 ArrayTaskId=2 JobName=wrap
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=gb[001-002]
   JOB_GRES=gpu:8
     Nodes=gb[001-002] CPU_IDs=0-3 Mem=0 GRES=gpu:4(IDX:0-3)

JobId=9 HetJobId=8 HetJobOffset=1 JobName=wrap
   JobState=PENDING Reason=Resources Dependency=(null)
   NodeList=(null)
";

    #[test]
    fn array_tasks_and_het_components_are_records_of_the_job_sbatch_returned() {
        let r = job_records(SHOW_JOB).unwrap();
        assert_eq!((r[0].id, r[0].submitted_as), (7, 5));
        assert_eq!((r[1].id, r[1].submitted_as, r[1].nodes.len()), (9, 8, 0));
        let gb002 = &r[0].held["gb002"];
        assert_eq!(gb002.gpus, (0..=3).collect());
        assert_eq!(gb002.cpus, (0..=3).collect());
    }

    #[test]
    fn gres_counts_read_every_form_slurm_prints() {
        assert_eq!(gres_count("gpu:4"), 4);
        assert_eq!(gres_count("gpu:nvidia:4(S:0)"), 4);
        assert_eq!(gres_count("gpu:2(IDX:0-1)"), 2);
        assert_eq!(gres_count("(null)"), 0);
    }

    #[test]
    fn queue_ids_are_read_as_the_job_sbatch_returned() {
        let q = queue_lines("12_[3-4]|PENDING|Resources\n13+1|RUNNING|None\n");
        assert_eq!((q[0].submitted_as, q[1].submitted_as), (12, 13));
        assert_eq!(q[0].reason, "Resources");
    }
}
