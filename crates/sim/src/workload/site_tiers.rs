//! A site's own preemption tiers for its sacct history (issue 52): each job's tier from its
//! partition (preempt/partition_prio: the partition's `PriorityTier`, and preemptable unless
//! its `PreemptMode` is `OFF`) or from its QOS (preempt/qos: a level per QOS, preemptable when
//! a higher QOS lists it in `Preempt`), so a history preempts as the site does.
//!
//! The user names the tiers on the command line, `NAME=LEVEL` or `NAME=LEVEL:preemptable`
//! (`--tier-partition`, `--tier-qos`); the sacct reader keeps the field it needs and gives
//! each job its tier. A job whose partition (QOS) is not listed keeps the default tier (level
//! 0, not preemptable): it is never preempted and preempts nothing. A listed name that no job
//! of the export carries is an error, as it is most likely a typo.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::job::Tier;

/// The sacct field a site's tiers are named by: Slurm's two preemption plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TierField {
    Partition,
    Qos,
}

impl TierField {
    /// The command-line option that sets tiers by this field.
    pub fn flag(self) -> &'static str {
        match self {
            TierField::Partition => "--tier-partition",
            TierField::Qos => "--tier-qos",
        }
    }

    /// Its name in a sacct export's header.
    pub fn sacct_name(self) -> &'static str {
        match self {
            TierField::Partition => "Partition",
            TierField::Qos => "QOS",
        }
    }
}

/// The tiers of the names listed; every other name keeps the default tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SiteTiers {
    pub by: TierField,
    pub tiers: BTreeMap<String, Tier>,
}

impl SiteTiers {
    /// From `NAME=LEVEL` (not preemptable) and `NAME=LEVEL:preemptable` items; each bad item
    /// is an error naming it.
    pub fn parse(by: TierField, items: &[String]) -> Result<SiteTiers, String> {
        let mut tiers = BTreeMap::new();
        for item in items {
            let bad = |why: &str| format!("{} `{item}`: {why}", by.flag());
            let (name, tier) = item
                .split_once('=')
                .ok_or_else(|| bad("expected NAME=LEVEL or NAME=LEVEL:preemptable"))?;
            let name = name.trim();
            if name.is_empty() {
                return Err(bad("the name is empty"));
            }
            let (level, preemptable) = match tier.split_once(':') {
                None => (tier, false),
                Some((level, "preemptable")) => (level, true),
                Some(_) => return Err(bad("after the level only `:preemptable` may follow")),
            };
            let level = level
                .trim()
                .parse()
                .map_err(|_| bad("the level is not a whole number (0 to 4294967295)"))?;
            let tier = Tier { level, preemptable };
            if tiers.insert(name.to_string(), tier).is_some() {
                return Err(bad(&format!("{name} is listed twice")));
            }
        }
        if tiers.is_empty() {
            return Err(format!("{}: list at least one NAME=LEVEL", by.flag()));
        }
        Ok(SiteTiers { by, tiers })
    }

    /// The tier of a job whose partition (or QOS) is `name`.
    pub fn tier_of(&self, name: Option<&str>) -> Tier {
        name.and_then(|n| self.tiers.get(n).copied())
            .unwrap_or_default()
    }

    /// An error naming every listed name that `found` (the names the export's jobs carry)
    /// lacks, and what the export has instead.
    pub fn check_found(&self, found: &BTreeSet<String>) -> Result<(), String> {
        let missing: Vec<&str> = self
            .tiers
            .keys()
            .filter(|n| !found.contains(*n))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let field = self.by.sacct_name();
        let present = if found.is_empty() {
            "none".to_string()
        } else {
            found.iter().cloned().collect::<Vec<_>>().join(", ")
        };
        Err(format!(
            "{}: no job of the export has {field} {} (its {field} values: {present})",
            self.by.flag(),
            missing.join(" or ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(items: &[&str]) -> Result<SiteTiers, String> {
        let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        SiteTiers::parse(TierField::Partition, &items)
    }

    #[test]
    fn a_listed_name_gets_its_level_and_an_unlisted_one_the_default_tier() {
        let tiers = parse(&["high=2", "low=1:preemptable"]).unwrap();
        let tier = |name| {
            let t = tiers.tier_of(name);
            (t.level, t.preemptable)
        };
        assert_eq!(tier(Some("high")), (2, false));
        assert_eq!(tier(Some("low")), (1, true));
        assert_eq!(tier(Some("debug")), (0, false));
        assert_eq!(tier(None), (0, false));
        assert!(tiers
            .tier_of(Some("high"))
            .preempts(tiers.tier_of(Some("low"))));
    }

    #[test]
    fn each_bad_item_is_an_error_naming_it() {
        let err = |items: &[&str]| parse(items).unwrap_err();
        assert_eq!(
            err(&["high"]),
            "--tier-partition `high`: expected NAME=LEVEL or NAME=LEVEL:preemptable"
        );
        assert_eq!(
            err(&["high=top"]),
            "--tier-partition `high=top`: the level is not a whole number (0 to 4294967295)"
        );
        assert_eq!(
            err(&["low=1:requeue"]),
            "--tier-partition `low=1:requeue`: after the level only `:preemptable` may follow"
        );
        assert_eq!(err(&["=1"]), "--tier-partition `=1`: the name is empty");
        assert_eq!(
            err(&["low=1", "low=2"]),
            "--tier-partition `low=2`: low is listed twice"
        );
    }

    #[test]
    fn a_name_no_job_carries_is_an_error_naming_it_and_what_the_export_has() {
        let tiers = parse(&["high=2", "hgih=2", "low=1:preemptable"]).unwrap();
        let found: BTreeSet<String> = ["high", "low", "debug"].map(String::from).into();
        assert_eq!(
            tiers.check_found(&found).unwrap_err(),
            "--tier-partition: no job of the export has Partition hgih (its Partition values: debug, high, low)"
        );
        let found: BTreeSet<String> = ["high", "hgih", "low"].map(String::from).into();
        assert_eq!(tiers.check_found(&found), Ok(()));
    }
}
