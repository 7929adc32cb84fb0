//! Differential test: the simulator's model of Slurm 24.11 topology/block must choose exactly
//! the nodes the real slurmctld chose in the recorded lab session
//! (`tests/fixtures/block-24.11.5.trace`, regenerate with `scripts/record-block-fixture.sh`).

use topology_nvl72::hostlist;
use topology_nvl72::sim::block;

const FIXTURE: &str = include_str!("fixtures/block-24.11.5.trace");

/// `gb001` -> 0: the lab's node table order, which is also the bitmap order block uses.
fn index(node: &str) -> usize {
    node.trim_start_matches("gb")
        .parse::<usize>()
        .expect("lab tray name")
        - 1
}

fn indices(list: &str) -> Vec<usize> {
    let mut v: Vec<usize> = hostlist::expand(list)
        .expect("hostlist")
        .iter()
        .map(|n| index(n))
        .collect();
    v.sort_unstable();
    v
}

struct Step {
    line: String,
    free: Vec<bool>,
    nodes: usize,
    segment: usize,
    expected: Option<Vec<usize>>,
}

fn steps(racks: usize, trays: usize) -> Vec<Step> {
    let field = |line: &str, key: &str| -> String {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} missing in {line}"))
            .to_string()
    };
    FIXTURE
        .lines()
        .filter(|l| l.starts_with("submit "))
        .map(|line| {
            let (req, result) = line.split_once(" -> ").expect("result");
            let mut free = vec![false; racks * trays];
            let free_list = field(req, "free=");
            if free_list != "none" {
                for i in indices(&free_list) {
                    free[i] = true;
                }
            }
            Step {
                line: line.to_string(),
                free,
                nodes: field(req, "nodes=").parse().unwrap(),
                segment: field(req, "segment=").parse().unwrap(),
                expected: match result.trim() {
                    "PENDING" | "REJECTED" => None,
                    list => Some(indices(list)),
                },
            }
        })
        .collect()
}

#[test]
fn block_model_matches_the_real_slurmctld() {
    let header = FIXTURE
        .lines()
        .find(|l| l.starts_with("racks "))
        .expect("racks line");
    let nums: Vec<usize> = header
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (racks, trays) = (nums[0], nums[1]);
    let steps = steps(racks, trays);
    assert!(steps.len() >= 45, "fixture too short: {}", steps.len());
    let mut mismatches = Vec::new();
    for s in &steps {
        let got = block::choose(&s.free, racks, trays, s.nodes, Some(s.segment)).map(|mut v| {
            v.sort_unstable();
            v
        });
        if got != s.expected {
            mismatches.push(format!("{}\n   model: {got:?}", s.line));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} steps differ:\n{}",
        mismatches.len(),
        steps.len(),
        mismatches.join("\n")
    );
}
