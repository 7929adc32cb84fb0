//! `[policy] switches`: the rack limit of jobs that do not pass `--switches` themselves.
//!
//! `"off"` (the default) keeps today's rules: such jobs have no rack limit. A table
//! `{ count = N, wait_minutes = W }` treats them as if they had asked for `--switches=N@W`:
//! at most N racks until they have waited W minutes (`placement::RackLimit`). Slurm caps a
//! job's own `@max-time` at `SchedulerParameters=max_switch_wait` (300 s by default); this
//! default is the admin's and is not capped.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Unexpected, Visitor};
use serde::Deserialize;

/// The rack limit `[policy] switches` gives jobs without `--switches`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Switches {
    /// No limit for jobs that do not ask for one: the rules as without `--switches`.
    #[default]
    Off,
    /// As if the job had passed `--switches=count@wait_minutes`.
    Limit { count: u32, wait_minutes: u32 },
}

impl Switches {
    /// The value as topology.toml spells it (`Config::to_toml`, change descriptions).
    pub fn as_toml(self) -> String {
        match self {
            Switches::Off => "\"off\"".into(),
            Switches::Limit {
                count,
                wait_minutes,
            } => format!("{{ count = {count}, wait_minutes = {wait_minutes} }}"),
        }
    }
}

/// The table form, read strictly so that a typo in a key is an error with its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitToml {
    count: u32,
    wait_minutes: u32,
}

/// What the two forms say when a value is neither.
const EXPECTED: &str = "\"off\" or { count = N, wait_minutes = W }";

impl<'de> Deserialize<'de> for Switches {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SwitchesVisitor)
    }
}

struct SwitchesVisitor;

impl<'de> Visitor<'de> for SwitchesVisitor {
    type Value = Switches;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Switches, E> {
        match v {
            "off" => Ok(Switches::Off),
            _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Switches, A::Error> {
        let limit = LimitToml::deserialize(de::value::MapAccessDeserializer::new(map))?;
        if limit.count == 0 {
            // tree reads `--switches=0` as no limit; here "off" says so.
            return Err(de::Error::custom(
                "switches: count must be at least 1 (\"off\" means no limit)",
            ));
        }
        Ok(Switches::Limit {
            count: limit.count,
            wait_minutes: limit.wait_minutes,
        })
    }
}
