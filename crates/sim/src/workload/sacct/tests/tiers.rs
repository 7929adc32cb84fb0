//! A site's tiers by partition or QOS, read from its history ([`SacctOptions::tiers`]).

use super::super::*;
use crate::workload::site_tiers::{SiteTiers, TierField};

/// A hand-written history (tests/fixtures/sacct/README.md, "A history with two tiers"):
/// partition `low` (QOS `standard`), `high` (`urgent`) and `debug` (`normal`).
const TWO_TIERS: &[u8] = include_bytes!("../../../../../../tests/fixtures/sacct/two-tiers.txt");
const TWO_TIERS_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/sacct/two-tiers.txt"
);

const HIGH: Tier = Tier {
    level: 1,
    preemptable: false,
};
const LOW: Tier = Tier {
    level: 0,
    preemptable: true,
};

fn tiers_by(by: TierField, items: &[&str]) -> SacctOptions {
    let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    SacctOptions {
        tiers: Some(SiteTiers::parse(by, &items).unwrap()),
        ..SacctOptions::default()
    }
}

/// The partition each job of [`TWO_TIERS`] ran in.
fn partition_of(id: &str) -> &'static str {
    match id.parse::<u32>().unwrap() {
        118 | 120 | 122 => "high",
        117 | 119 | 121 => "debug",
        _ => "low",
    }
}

#[test]
fn a_history_of_two_partitions_gets_the_tiers_mapped_to_them() {
    let opts = tiers_by(TierField::Partition, &["high=1", "low=0:preemptable"]);
    let h = parse(TWO_TIERS, &opts).unwrap();
    assert_eq!(h.jobs.len(), 22);
    for j in &h.jobs {
        let expected = match partition_of(&j.id) {
            "high" => HIGH,
            "low" => LOW,
            _ => Tier::default(),
        };
        assert_eq!(j.tier, expected, "job {} of {}", j.id, partition_of(&j.id));
    }
    // The simulator's jobs carry them: the high tier preempts the low one.
    let jobs = h.workload();
    let high = jobs.iter().find(|j| j.trays == 18).unwrap();
    let low = jobs.iter().find(|j| j.tier == LOW).unwrap();
    assert!(high.tier.preempts(low.tier));
}

#[test]
fn qos_names_the_same_tiers_in_the_text_and_the_json_export() {
    let by_qos = tiers_by(TierField::Qos, &["urgent=1", "standard=0:preemptable"]);
    let by_partition = tiers_by(TierField::Partition, &["high=1", "low=0:preemptable"]);
    let h = parse(TWO_TIERS, &by_qos).unwrap();
    assert_eq!(h.jobs, parse(TWO_TIERS, &by_partition).unwrap().jobs);
    let json = r#"{"jobs": [
      {"job_id": 1, "partition": "gpu", "qos": "urgent", "allocation_nodes": 18,
       "time": {"submission": 100, "start": 100, "end": 160, "elapsed": 60, "limit": 10},
       "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 72}]}},
      {"job_id": 2, "partition": "gpu", "qos": "standard", "allocation_nodes": 2,
       "time": {"submission": 101, "start": 101, "end": 161, "elapsed": 60, "limit": 10},
       "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 8}]}}]}"#;
    let h = parse(json.as_bytes(), &by_qos).unwrap();
    let tiers: Vec<Tier> = h.jobs.iter().map(|j| j.tier).collect();
    assert_eq!(tiers, [HIGH, LOW]);
}

#[test]
fn a_partition_no_job_ran_in_is_an_error_naming_it() {
    let opts = tiers_by(TierField::Partition, &["high=1", "hgih=2"]);
    let err = read(Path::new(TWO_TIERS_PATH), &opts).unwrap_err();
    assert!(
        err.ends_with(
            "two-tiers.txt: --tier-partition: no job of the export has Partition hgih \
             (its Partition values: debug, high, low)"
        ),
        "{err}"
    );
    let opts = tiers_by(TierField::Qos, &["premium=3"]);
    let err = read(Path::new(TWO_TIERS_PATH), &opts).unwrap_err();
    assert!(
        err.ends_with(
            "no job of the export has QOS premium (its QOS values: normal, standard, urgent)"
        ),
        "{err}"
    );
}

#[test]
fn tiers_by_a_field_the_export_lacks_are_an_error_naming_it() {
    let text = "JobID|Submit|Start|End|ElapsedRaw|TimelimitRaw|AllocTRES\n\
                1|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T10:00:05|5|1|gres/gpu=4\n";
    let err = parse(text.as_bytes(), &tiers_by(TierField::Qos, &["urgent=1"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1: --tier-qos needs the QOS field in the export (add it to sacct's --format)"
    );
}

#[test]
fn without_a_tier_rule_every_job_keeps_the_default_tier() {
    let lab: &[u8] = include_bytes!("../../../../../../tests/fixtures/sacct/lab-26.05.json");
    for bytes in [TWO_TIERS, lab] {
        let h = parse(bytes, &SacctOptions::default()).unwrap();
        assert!(h.jobs.iter().all(|j| j.tier == Tier::default()));
        assert!(h.workload().iter().all(|j| j.tier == Tier::default()));
        assert!(h.tier_names.is_empty(), "no names gathered without a rule");
    }
}
