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
    /// - `slurm_eval_action`: `eval_action`, one-node hooks, ranks, topology errors (26.05);
    /// - `slurm_segment_update`: `scontrol update` changes a pending job's segment size and
    ///   segment flags, with no plugin hook (26.11; the plugin reads them at every evaluation
    ///   anyway, so only the tests differ).
    cfgs: &'static [&'static str],
}

const SUPPORTED: [Series; 5] = [
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
    // 26.11: the same interface as 26.05 (syms[], signatures and topology.h unchanged at
    // master 284c3b9, 26.11.0-0rc1); job_record_t and slurm_conf_t layouts moved, which
    // bindgen reads from the tree (docs/abi.md, "26.11").
    Series {
        major: 26,
        minor: 11,
        cfgs: &[
            "slurm_ctx",
            "slurm_jobinfo",
            "slurm_eval_action",
            "slurm_segment_update",
        ],
    },
];
const ALL_CFGS: [&str; 4] = [
    "slurm_ctx",
    "slurm_jobinfo",
    "slurm_eval_action",
    "slurm_segment_update",
];
