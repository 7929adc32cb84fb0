// The Slurm series whose topology plugin interface topology/nvl72 implements, and the `cfg`s
// each needs. Included by two build scripts: the plugin's (build.rs, which exports that
// interface) and the end-to-end suite's (tests/e2e/build.rs, whose tests differ by series).

/// A Slurm series whose topology plugin interface the crate implements.
struct Series {
    major: u32,
    minor: u32,
    /// The `cfg`s its interface needs: each series has those of the ones before it.
    /// - `slurm_ctx`: ops take the topology context (25.05);
    /// - `slurm_jobinfo`: `topoinfo_*` names, per-job segment data, topology string (25.11);
    /// - `slurm_eval_action`: `eval_action`, one-node hooks, ranks, topology errors (26.05).
    cfgs: &'static [&'static str],
}

const SUPPORTED: [Series; 4] = [
    Series {
        major: 24,
        minor: 11,
        cfgs: &[],
    },
    Series {
        major: 25,
        minor: 5,
        cfgs: &["slurm_ctx"],
    },
    Series {
        major: 25,
        minor: 11,
        cfgs: &["slurm_ctx", "slurm_jobinfo"],
    },
    Series {
        major: 26,
        minor: 5,
        cfgs: &["slurm_ctx", "slurm_jobinfo", "slurm_eval_action"],
    },
];
const ALL_CFGS: [&str; 3] = ["slurm_ctx", "slurm_jobinfo", "slurm_eval_action"];
