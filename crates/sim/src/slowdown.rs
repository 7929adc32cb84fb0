//! What a rack boundary costs a job: its slowdown `s` from the pieces it got.
//!
//! A job inside one rack runs at NVLink speed (`s = 1`). A job cut by rack boundaries runs
//! `s` times longer, so it holds its trays `s` times longer for the same work. The model is
//! `docs/reference/split-slowdown.md` §4 (bandwidth arithmetic fitted to public
//! measurements); its §4.4 table is this module's test oracle:
//!
//! ```text
//! s = min(S_MAX, 1 + m·( max(α, φ_out·(r_ring(k_min) − 1)) + [cut]·φ_tight·(r_tight − 1)
//!                        + ρ·(R − F) ))
//! r_ring(k) = max(ring_floor, B_ring / (4·k·B_nic))      the smallest piece's NICs
//! r_tight   = r_ring(k_s)                                 dp and dense: a cut TP ring
//!           = max(1, (1 − k_s/g)·B_a2a/B_ib)             moe: all-to-all over one NIC
//! ```
//!
//! Pieces are trays per rack in rack order (Slurm ranks nodes in node-table order, and the
//! table follows the racks). `g`, the tightly coupled group in trays, is the job's
//! `--segment` when it has one, else its class's ([`CommClass::group`]), capped at n. The
//! job is *cut* when a boundary between pieces falls inside a group; `k_s` is the smaller
//! side of the worst-cut group. `R` is the racks the job got and `F` the fewest it could
//! take ([`fewest_racks`]: `⌈n/M⌉` for racks of `M` trays, whole segments per rack when it
//! has them); `m` is the `multiplier` a sweep scales the whole cost by (1 by default). Pure
//! arithmetic, no simulator types: the simulator, the
//! replay's stretched jobs and the timeline of a real run all price a placement here.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a job's GPUs talk, which sets its tight group when it has no `--segment`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum CommClass {
    /// Data-parallel only (or tensor-parallel inside a tray): nothing tighter than a tray.
    Dp,
    /// Tensor-parallel over 8 GPUs (TP8): a group of 2 trays.
    #[default]
    Dense,
    /// Mixture of experts, expert-parallel over 32 GPUs (EP32): a group of 8 trays.
    Moe,
}

impl CommClass {
    pub const ALL: [CommClass; 3] = [CommClass::Dp, CommClass::Dense, CommClass::Moe];

    /// The tight group in trays when the job has no `--segment` (ref §4.1).
    pub fn group(self) -> usize {
        match self {
            CommClass::Dp => 1,
            CommClass::Dense => 2,
            CommClass::Moe => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CommClass::Dp => "dp",
            CommClass::Dense => "dense",
            CommClass::Moe => "moe",
        }
    }

    pub fn parse(s: &str) -> Option<CommClass> {
        CommClass::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl fmt::Display for CommClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The model's constants (ref §4.3: defaults and the ranges the sweep explores).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// In-rack ring / NVLS all-reduce bandwidth per GPU, GB/s (770–850).
    pub b_ring: f64,
    /// Bandwidth of one NIC, GB/s; 4 per tray (44–50).
    pub b_nic: f64,
    /// The least any cross-rack ring costs, as a ratio (1.05–1.19).
    pub ring_floor: f64,
    /// In-rack all-to-all over cross-rack bandwidth per GPU (8–14).
    pub a2a_over_ib: f64,
    /// The least any split costs (0–0.05).
    pub alpha: f64,
    /// Share of a step in cross-rack outer traffic, data- or pipeline-parallel (0.02–0.10).
    pub phi_out: f64,
    /// Share of a step in the tight group's collectives, dense and dp (0.08–0.30).
    pub phi_tight_dense: f64,
    /// The same for a mixture of experts' all-to-all (0.08–0.25).
    pub phi_tight_moe: f64,
    /// Beyond this users resubmit rather than run (2–4).
    pub s_max: f64,
    /// Cost of each rack beyond the fewest the job's size needs (0–0.05; off by default:
    /// not in the reference, suggested by its C3).
    pub extra_rack: f64,
    /// Scales every cost, `s = 1 + m·(s_model − 1)` (ref §4.6.2: 0, 0.5, 1, 2).
    #[serde(default = "one")]
    pub multiplier: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for Params {
    fn default() -> Self {
        Params {
            b_ring: 800.0,
            b_nic: 48.0,
            ring_floor: 1.10,
            a2a_over_ib: 12.0,
            alpha: 0.02,
            phi_out: 0.05,
            phi_tight_dense: 0.15,
            phi_tight_moe: 0.15,
            s_max: 3.0,
            extra_rack: 0.0,
            multiplier: 1.0,
        }
    }
}

impl Params {
    /// Sets one constant by its name in this struct (`phi_tight_moe=0.2`).
    pub fn set(&mut self, key: &str, value: f64) -> Result<(), String> {
        let field = match key {
            "b_ring" => &mut self.b_ring,
            "b_nic" => &mut self.b_nic,
            "ring_floor" => &mut self.ring_floor,
            "a2a_over_ib" => &mut self.a2a_over_ib,
            "alpha" => &mut self.alpha,
            "phi_out" => &mut self.phi_out,
            "phi_tight_dense" => &mut self.phi_tight_dense,
            "phi_tight_moe" => &mut self.phi_tight_moe,
            "s_max" => &mut self.s_max,
            "extra_rack" => &mut self.extra_rack,
            "multiplier" => &mut self.multiplier,
            _ => {
                return Err(format!(
                    "unknown slowdown parameter {key:?} (b_ring, b_nic, ring_floor, \
                     a2a_over_ib, alpha, phi_out, phi_tight_dense, phi_tight_moe, s_max, \
                     extra_rack, multiplier)"
                ))
            }
        };
        if !value.is_finite() || value < 0.0 {
            return Err(format!(
                "slowdown parameter {key}={value}: must be a number >= 0"
            ));
        }
        *field = value;
        if self.b_nic == 0.0 || self.s_max < 1.0 || self.ring_floor < 1.0 {
            return Err(format!(
                "slowdown parameter {key}={value}: b_nic must be > 0, s_max and ring_floor >= 1"
            ));
        }
        Ok(())
    }

    /// The ring all-reduce cost when a piece of `k` trays carries the cross-rack traffic.
    fn ring(&self, k: usize) -> f64 {
        (self.b_ring / (4.0 * k as f64 * self.b_nic)).max(self.ring_floor)
    }
}

/// How split jobs are priced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "value")]
pub enum Model {
    /// Every job runs at full speed wherever it lands (the simulator before this model).
    #[default]
    Off,
    /// Every job on more than one rack runs `x` times longer (ref §4.6.1's sweep).
    Uniform(f64),
    /// Every split the job did not ask for runs `x` times longer: a job without `--segment`
    /// on more racks than its size needs (2 trays on 2 racks, 36 on 3), a job with one whose
    /// segment a rack boundary cuts. The price of exactly the splits a topology-aware
    /// scheduler avoids: necessary and segment-aligned splits cost nothing.
    Avoidable(f64),
    /// The bandwidth model with these constants.
    Priced(Params),
}

/// A placement's price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factor {
    /// The slowdown, `>= 1`.
    pub s: f64,
    /// Racks the job spans.
    pub racks: usize,
    /// The smallest piece, trays.
    pub k_min: usize,
    /// A rack boundary falls inside a tight group.
    pub cut: bool,
}

impl Factor {
    pub const WHOLE: Factor = Factor {
        s: 1.0,
        racks: 1,
        k_min: 0,
        cut: false,
    };

    pub fn split(&self) -> bool {
        self.racks > 1
    }
}

impl Model {
    /// The slowdown of a job with `pieces` (trays per rack, rack order), `--segment`
    /// `segment` and class `class`, on racks of `rack_size` trays.
    pub fn factor(
        &self,
        pieces: &[usize],
        segment: Option<usize>,
        class: CommClass,
        rack_size: usize,
    ) -> Factor {
        let pieces: Vec<usize> = pieces.iter().copied().filter(|&p| p > 0).collect();
        let n: usize = pieces.iter().sum();
        let k_min = pieces.iter().copied().min().unwrap_or(0);
        if pieces.len() <= 1 {
            return Factor {
                k_min,
                ..Factor::WHOLE
            };
        }
        let g = segment.unwrap_or_else(|| class.group()).clamp(1, n);
        let k_cut = cut_side(&pieces, g);
        let s = match *self {
            Model::Off => 1.0,
            Model::Uniform(x) => x.max(1.0),
            Model::Avoidable(x) => {
                let avoidable = match segment {
                    Some(_) => k_cut.is_some(),
                    None => pieces.len() > n.div_ceil(rack_size.max(1)),
                };
                if avoidable {
                    x.max(1.0)
                } else {
                    1.0
                }
            }
            Model::Priced(p) => {
                let outer = p.alpha.max(p.phi_out * (p.ring(k_min) - 1.0));
                let tight = k_cut.map_or(0.0, |k_s| match class {
                    CommClass::Moe => {
                        let a2a = ((1.0 - k_s as f64 / g as f64) * p.a2a_over_ib).max(1.0);
                        p.phi_tight_moe * (a2a - 1.0)
                    }
                    CommClass::Dp | CommClass::Dense => p.phi_tight_dense * (p.ring(k_s) - 1.0),
                });
                let fewest = fewest_racks(n, segment, rack_size);
                let extra = p.extra_rack * pieces.len().saturating_sub(fewest) as f64;
                (1.0 + p.multiplier * (outer + tight + extra))
                    .min(p.s_max)
                    .max(1.0)
            }
        };
        Factor {
            s,
            racks: pieces.len(),
            k_min,
            cut: k_cut.is_some(),
        }
    }
}

/// The fewest racks a job of `n` trays can take: whole segments per rack when it has them.
pub fn fewest_racks(n: usize, segment: Option<usize>, rack_size: usize) -> usize {
    let rack_size = rack_size.max(1);
    match segment {
        Some(s) if s > 0 && s <= rack_size => (n / s).div_ceil(rack_size / s),
        _ => n.div_ceil(rack_size),
    }
}

/// The smaller side of the worst-cut tight group of `g` trays, or `None` when every
/// boundary between pieces falls between groups.
fn cut_side(pieces: &[usize], g: usize) -> Option<usize> {
    let mut boundary = 0;
    pieces[..pieces.len() - 1]
        .iter()
        .filter_map(|&p| {
            boundary += p;
            let r = boundary % g;
            (r != 0).then(|| r.min(g - r))
        })
        .min()
}

/// What happens to a job whose stretched run passes its time limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limits {
    /// It runs to its end; the overrun is counted (a site with `OverTimeLimit=UNLIMITED`, or
    /// users who set generous limits).
    #[default]
    Lenient,
    /// Slurm kills it at its limit (TIMEOUT, no requeue): its work is lost.
    Strict,
}

/// How a run will end, as far as its slowdown and time limit decide (a tray failure may
/// still kill it first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Within its limit.
    Ends,
    /// Its stretched run passes the limit and it runs on (lenient limits).
    Overruns,
    /// Slurm kills it at its limit (strict limits): none of its work is usable.
    TimesOut,
}

/// The simulator's slowdown setting: the model, what happens at the limit, and how the
/// jobs' classes were assigned (for reports).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    pub model: Model,
    pub limits: Limits,
    /// `low`, `default`, `high`, `uniform:1.3`, `off`, with any changed constants.
    pub variant: String,
    /// How classes were given to jobs (`all dense`, `dp=0.3,dense=0.5,moe=0.2`, `by-size`).
    pub classes: String,
}

impl Default for Slowdown {
    fn default() -> Self {
        Slowdown {
            model: Model::Off,
            limits: Limits::Lenient,
            variant: "off".into(),
            classes: "all dense".into(),
        }
    }
}

impl Slowdown {
    /// How long a run of `runtime` takes at slowdown `s` (whole milliseconds, rounded up;
    /// exactly `runtime` at `s = 1`).
    pub fn stretch(runtime: u64, s: f64) -> u64 {
        if s <= 1.0 {
            runtime
        } else {
            (runtime as f64 * s).ceil() as u64
        }
    }

    pub fn is_off(&self) -> bool {
        self.model == Model::Off
    }

    /// How long a run of `runtime` at slowdown `s` lasts against its `limit`, and its fate:
    /// within the limit it ends; past it, it runs on (lenient) or Slurm ends it at the limit
    /// (strict). The simulator and the measure of a real run decide it alike.
    pub fn run(&self, runtime: u64, limit: u64, s: f64) -> (u64, Fate) {
        let stretched = Slowdown::stretch(runtime, s);
        match self.limits {
            _ if stretched <= limit => (stretched, Fate::Ends),
            Limits::Lenient => (stretched, Fate::Overruns),
            Limits::Strict => (limit, Fate::TimesOut),
        }
    }

    /// One line for the reports.
    pub fn describe(&self) -> String {
        if self.is_off() {
            return "off (split jobs run at full speed)".into();
        }
        let limits = match self.limits {
            Limits::Lenient => "lenient limits (overruns run on)",
            Limits::Strict => "strict limits (Slurm kills at the limit)",
        };
        format!("{}; classes {}; {limits}", self.variant, self.classes)
    }
}

/// Which class each job gets (`--comm-mix`).
#[derive(Debug, Clone, PartialEq)]
pub enum ClassRule {
    All(CommClass),
    /// Drawn at random with these shares of dp, dense and moe (summing to 1).
    Mix([f64; 3]),
    /// 1–2 trays dp, 3–18 dense, larger moe: an assumption published as one row of the
    /// sweep, never a default.
    BySize,
}

impl ClassRule {
    /// `dp=0.3,dense=0.5,moe=0.2` (shares are normalized; missing classes get 0) or `by-size`.
    pub fn parse(spec: &str) -> Result<ClassRule, String> {
        if spec.trim() == "by-size" {
            return Ok(ClassRule::BySize);
        }
        let mut shares = [0.0; 3];
        for kv in spec.split(',') {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                format!("--comm-mix {spec}: expected by-size or class=share, e.g. dp=0.3,dense=0.5,moe=0.2")
            })?;
            let class = CommClass::parse(k.trim()).ok_or_else(|| {
                format!("--comm-mix {spec}: unknown class {k:?} (dp, dense, moe)")
            })?;
            let v: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("--comm-mix {spec}: {k}={v} is not a share >= 0"))?;
            shares[class as usize] = v;
        }
        let total: f64 = shares.iter().sum();
        if total <= 0.0 {
            return Err(format!("--comm-mix {spec}: the shares add up to 0"));
        }
        Ok(ClassRule::Mix(shares.map(|x| x / total)))
    }

    /// The class of a job of `trays` trays, given a uniform draw `u` in [0, 1).
    pub fn class(&self, trays: usize, u: f64) -> CommClass {
        match *self {
            ClassRule::All(c) => c,
            ClassRule::BySize => match trays {
                0..=2 => CommClass::Dp,
                3..=18 => CommClass::Dense,
                _ => CommClass::Moe,
            },
            ClassRule::Mix([dp, _, _]) if u < dp => CommClass::Dp,
            ClassRule::Mix([dp, dense, _]) if u < dp + dense => CommClass::Dense,
            ClassRule::Mix(_) => CommClass::Moe,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            ClassRule::All(c) => format!("all {c}"),
            ClassRule::BySize => "by size (1-2 trays dp, 3-18 dense, 19+ moe)".into(),
            ClassRule::Mix(m) => format!("dp={:.2},dense={:.2},moe={:.2}", m[0], m[1], m[2]),
        }
    }
}

/// `--slowdown off|low|default|high|uniform:X[,key=value...]`: the model and the class every
/// job gets unless `--comm-mix` says otherwise (`None` for `off` and `uniform`, where the
/// class changes nothing).
pub fn parse_variant(spec: &str) -> Result<(Model, String, Option<CommClass>), String> {
    let mut parts = spec.split(',');
    let head = parts.next().unwrap_or_default().trim();
    let (mut model, class) = match head {
        "off" => (Model::Off, None),
        "low" => (Model::Priced(Params::default()), Some(CommClass::Dp)),
        "default" => (Model::Priced(Params::default()), Some(CommClass::Dense)),
        "high" => (Model::Priced(Params::default()), Some(CommClass::Moe)),
        u if u.starts_with("uniform:") || u.starts_with("avoidable:") => {
            let (kind, x) = u.split_once(':').unwrap_or_default();
            let x: f64 = x
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 1.0)
                .ok_or_else(|| format!("--slowdown {spec}: {kind}:X needs a number X >= 1"))?;
            let model = if kind == "uniform" {
                Model::Uniform(x)
            } else {
                Model::Avoidable(x)
            };
            (model, None)
        }
        other => {
            return Err(format!(
                "--slowdown {other:?}: expected off, low, default, high, uniform:X or avoidable:X"
            ))
        }
    };
    for kv in parts {
        let (key, value) = kv
            .split_once('=')
            .ok_or_else(|| format!("--slowdown {spec}: {kv:?} is not key=value"))?;
        let value: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("--slowdown {spec}: {key}={value} is not a number"))?;
        match &mut model {
            Model::Priced(p) => p
                .set(key.trim(), value)
                .map_err(|e| format!("--slowdown {spec}: {e}"))?,
            _ => {
                return Err(format!(
                    "--slowdown {spec}: only low, default and high take parameters"
                ))
            }
        }
    }
    Ok((model, spec.trim().to_string(), class))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn priced(pieces: &[usize], segment: Option<usize>, class: CommClass) -> f64 {
        Model::Priced(Params::default())
            .factor(pieces, segment, class, 18)
            .s
    }

    /// Ref §4.4, every row: (pieces, low, default, high).
    const WORKED: [(&[usize], f64, f64, f64); 13] = [
        (&[1, 1], 1.16, 1.63, 1.91),
        (&[2, 2], 1.05, 1.05, 1.80),
        (&[3, 1], 1.16, 1.63, 2.36),
        (&[4, 4], 1.02, 1.02, 1.77),
        (&[7, 1], 1.16, 1.63, 2.58),
        (&[5, 3], 1.02, 1.50, 2.00),
        (&[8, 8], 1.02, 1.02, 1.02),
        (&[9, 7], 1.02, 1.50, 2.45),
        (&[17, 1], 1.16, 1.63, 2.58),
        (&[16, 16], 1.02, 1.02, 1.02),
        (&[18, 14], 1.02, 1.02, 2.22),
        (&[18, 18], 1.02, 1.02, 2.22),
        (&[12], 1.0, 1.0, 1.0),
    ];

    #[test]
    fn the_reference_table_holds_for_every_class() {
        for (pieces, low, dense, moe) in WORKED {
            for (class, want) in [
                (CommClass::Dp, low),
                (CommClass::Dense, dense),
                (CommClass::Moe, moe),
            ] {
                let s = priced(pieces, None, class);
                assert!(
                    (s - want).abs() <= 0.005,
                    "{pieces:?} {class}: {s:.3}, ref {want}"
                );
            }
        }
    }

    #[test]
    fn a_kept_segment_costs_only_the_least_split() {
        let s = priced(&[16, 16, 16, 16], Some(16), CommClass::Moe);
        assert!((s - 1.02).abs() < 1e-9);
        // 18 + 18 with segment 16 cuts one segment 2 | 14.
        assert!(priced(&[18, 18], Some(16), CommClass::Moe) > 2.0);
    }

    #[test]
    fn uniform_prices_every_split_alike_and_off_prices_none() {
        let u = Model::Uniform(1.3);
        assert_eq!(u.factor(&[9, 9], None, CommClass::Dp, 18).s, 1.3);
        assert_eq!(u.factor(&[18], None, CommClass::Moe, 18).s, 1.0);
        let a = Model::Avoidable(1.5);
        assert_eq!(a.factor(&[1, 1], None, CommClass::Dp, 18).s, 1.5);
        assert_eq!(a.factor(&[18, 14], None, CommClass::Moe, 18).s, 1.0);
        assert_eq!(a.factor(&[12, 10, 10], None, CommClass::Dp, 18).s, 1.5);
        // Segments are the user's own unit of splitting: only a cut one pays.
        assert_eq!(a.factor(&[4, 4, 4, 4], Some(4), CommClass::Dp, 18).s, 1.0);
        assert_eq!(a.factor(&[6, 10], Some(4), CommClass::Dp, 18).s, 1.5);
        let off = Model::Off.factor(&[1, 1], None, CommClass::Moe, 18);
        assert_eq!((off.s, off.racks, off.k_min, off.cut), (1.0, 2, 1, true));
    }

    #[test]
    fn extra_racks_cost_only_beyond_the_fewest() {
        let m = Model::Priced(Params {
            extra_rack: 0.05,
            ..Params::default()
        });
        let two = m.factor(&[16, 16], None, CommClass::Dp, 18).s;
        let three = m.factor(&[12, 10, 10], None, CommClass::Dp, 18).s;
        assert!((two - 1.02).abs() < 1e-9, "{two}");
        assert!((three - 1.07).abs() < 1e-9, "{three}");
    }

    #[test]
    fn class_rules_parse_normalize_and_split_by_size() {
        let mix = ClassRule::parse("dp=1,moe=3").unwrap();
        assert_eq!(mix, ClassRule::Mix([0.25, 0.0, 0.75]));
        assert_eq!(mix.class(4, 0.2), CommClass::Dp);
        assert_eq!(mix.class(4, 0.3), CommClass::Moe);
        let by_size = ClassRule::parse("by-size").unwrap();
        let classes: Vec<_> = [1, 2, 3, 18, 19].map(|n| by_size.class(n, 0.0)).into();
        use CommClass::*;
        assert_eq!(classes, vec![Dp, Dp, Dense, Dense, Moe]);
        for bad in ["dp", "tp=1", "dp=-1", "dp=0"] {
            assert!(ClassRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn variants_parse_with_their_class_and_reject_nonsense() {
        let (m, name, class) = parse_variant("high,phi_tight_moe=0.25").unwrap();
        assert_eq!(
            (name.as_str(), class),
            ("high,phi_tight_moe=0.25", Some(CommClass::Moe))
        );
        let Model::Priced(p) = m else { panic!() };
        assert_eq!(p.phi_tight_moe, 0.25);
        assert_eq!(parse_variant("uniform:1.5").unwrap().0, Model::Uniform(1.5));
        assert_eq!(
            parse_variant("avoidable:2").unwrap().0,
            Model::Avoidable(2.0)
        );
        assert_eq!(parse_variant("off").unwrap().0, Model::Off);
        for bad in [
            "fast",
            "uniform:0.5",
            "uniform:x",
            "default,phi=1",
            "default,alpha",
            "uniform:2,alpha=1",
        ] {
            assert!(parse_variant(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn slowdown_stays_in_its_bounds(
            pieces in prop::collection::vec(1usize..=18, 1..6),
            class in prop::sample::select(CommClass::ALL.to_vec()),
            segment in prop::option::of(1usize..=18),
        ) {
            let f = Model::Priced(Params::default()).factor(&pieces, segment, class, 18);
            prop_assert!(f.s >= 1.0 && f.s <= 3.0);
            prop_assert_eq!(f.s == 1.0, pieces.len() == 1);
            let half = Model::Priced(Params { multiplier: 0.5, ..Params::default() })
                .factor(&pieces, segment, class, 18);
            prop_assert!((half.s - 1.0 - (f.s - 1.0) / 2.0).abs() < 1e-9 || f.s == 3.0);
        }

        #[test]
        fn aligned_pieces_are_never_cut(
            groups in prop::collection::vec(1usize..=4, 2..5),
            class in prop::sample::select(CommClass::ALL.to_vec()),
        ) {
            let g = class.group();
            let pieces: Vec<usize> = groups.iter().map(|k| k * g).collect();
            let f = Model::Priced(Params::default()).factor(&pieces, None, class, 18);
            prop_assert!(!f.cut);
        }

        #[test]
        fn a_larger_smallest_piece_never_costs_more(k in 1usize..17, class in prop::sample::select(CommClass::ALL.to_vec())) {
            let g = class.group();
            // Aligned pieces, so only the smallest piece changes.
            let small = k.div_ceil(g) * g;
            let big = small + g;
            prop_assume!(big <= 18);
            let m = Model::Priced(Params::default());
            prop_assert!(m.factor(&[18, big], None, class, 18).s <= m.factor(&[18, small], None, class, 18).s);
        }
    }
}
