use super::*;
use nvl72_engine::idle::Cause;
use nvl72_engine::testkit::{racks, Kit};

/// Four racks of 18 trays, like the lab. rack1: job 7 (A) on 10 trays, one drained; rack2:
/// job 8 (B) on 16 trays (2 free); rack3 full of job 9 (C); rack4: one tray down, the rest
/// free (17).
fn lab() -> Kit {
    racks(&[
        "rack1 AAAAAAAAAA-.......",
        "rack2 BBBBBBBBBBBBBBBB..",
        "rack3 CCCCCCCCCCCCCCCCCC",
        "rack4 x.................",
    ])
}

fn config() -> Config {
    lab().config().clone()
}

fn live() -> Live {
    live_of(&lab(), &[('A', 7), ('B', 8), ('C', 9)])
}

/// The trays as `nvl72 status` reads them from Slurm, by node name: `.` free, `r` held, `-`
/// drained, `x` down, and each job character of `jobs` running that job (`+` and `*` run
/// every job of `jobs`). `_` is left out, as a node Slurm does not report.
fn live_of(kit: &Kit, jobs: &[(char, u32)]) -> Live {
    let all: Vec<u32> = jobs.iter().map(|j| j.1).collect();
    let trays = kit
        .drawn()
        .filter_map(|(name, c)| {
            let state = match c {
                '.' => TrayState::Free,
                'r' => TrayState::Held,
                '-' => TrayState::Drained,
                'x' => TrayState::Down,
                '_' => return None,
                '+' | '*' => TrayState::Busy(all.clone()),
                _ => TrayState::Busy(vec![
                    jobs.iter()
                        .find(|j| j.0 == c)
                        .unwrap_or_else(|| panic!("no job drawn as {c:?}"))
                        .1,
                ]),
            };
            Some((name.to_string(), state))
        })
        .collect();
    Live {
        trays,
        ..Live::default()
    }
}

fn pending(id: u32, min_nodes: usize, gpus: u64) -> PendingJob {
    PendingJob {
        id,
        min_nodes,
        segment: None,
        demand: Demand {
            gpus,
            cpus: 1,
            trays: 0,
        },
        reason: "Resources".into(),
    }
}

#[test]
fn rows_show_each_tray_and_the_largest_job_per_rack() {
    let st = compute(&config(), &live());
    let maps: Vec<&str> = st.racks.iter().map(|r| r.map.as_str()).collect();
    assert_eq!(
        maps,
        [
            "AAAAAAAAAA-.......",
            "BBBBBBBBBBBBBBBB..",
            "CCCCCCCCCCCCCCCCCC",
            "x.................",
        ]
    );
    assert_eq!(st.legend, vec![('A', 7), ('B', 8), ('C', 9)]);
    let r1 = &st.racks[0];
    assert_eq!((r1.free, r1.allocated, r1.unavailable), (7, 10, 1));
    assert_eq!(r1.largest, vec![7, 4, 0, 0]);
    assert_eq!(st.racks[3].largest, vec![17, 16, 16, 16]);
    assert_eq!((st.free_trays, st.unavailable_trays), (26, 2));
    // Cluster-wide as the plugin places it: 17 in one rack; more needs two racks together
    // (fewest racks): rack4 + rack1 hold 24; with segments, pieces of 4 over the racks.
    assert_eq!(st.largest[0], 24);
    assert_eq!(st.largest[1], 20, "segments of 4: 4 in rack1, 16 in rack4");
    assert_eq!(st.largest[3], 16);
    // Nobody waits: nothing is stranded.
    assert_eq!(st.stranded_gpus, 0);
    assert!(st.waiting_for_topology.is_empty());
}

#[test]
fn stranded_gpus_and_jobs_waiting_for_topology() {
    let mut l = live();
    // -N 18 waits: 26 trays are free, but no rack is whole; --gpus=12 (3 trays) fits rack1
    // and rack4, not rack2's 2 free trays.
    l.pending = vec![pending(20, 18, 0), pending(21, 1, 12)];
    // A job held back by a dependency uses no trays now: it neither makes rack2 usable nor
    // waits for topology.
    l.pending.push(PendingJob {
        reason: "Dependency".into(),
        ..pending(22, 2, 0)
    });
    let st = compute(&config(), &l);
    assert_eq!(
        st.waiting_for_topology
            .iter()
            .map(|j| j.id)
            .collect::<Vec<_>>(),
        vec![20]
    );
    // rack2's two free trays (8 GPUs) are usable by no waiting job: the head, -N 18, waits
    // for a whole rack, and --gpus=12 needs 3 trays in one rack.
    assert_eq!(st.racks[1].stranded_gpus, 8);
    assert_eq!(st.racks[1].stranded_cause, Some(Cause::WholeRack));
    assert_eq!(st.stranded_gpus, 8);
    assert_eq!(st.racks[0].stranded_cause, None, "rack1 fits --gpus=12");
    let text = render(&st);
    assert!(text.contains("JobId=20 -N 18  Resources"), "{text}");
    assert!(text.contains("  8  whole-rack\n"), "{text}");
    assert!(
        text.contains("why stranded: whole-rack = head waits for whole racks"),
        "{text}"
    );
    assert!(prometheus(&st)
        .contains("nvl72_rack_stranded_gpus{rack=\"rack2\",cause=\"whole-rack\"} 8\n"));
    assert!(text.contains("rack2    BBBBBBBBBBBBBBBB.."), "{text}");
    assert!(text.lines().all(|l| l == l.trim_end()), "{text}");
}

/// A layout mismatch in slurmctld: the first line says every figure below assumes a rack
/// placement that is not happening, and the metric is 1.
#[test]
fn placement_switched_off_leads_the_view_and_the_metrics() {
    let on = compute(&config(), &live());
    assert!(prometheus(&on).contains("\nnvl72_rack_placement_off 0\n"));
    let off = Status {
        placement_off: Some("built for Slurm 24.11.5 but ...".into()),
        ..on
    };
    assert!(render(&off).starts_with(
        "RACK PLACEMENT IS OFF in slurmctld: built for Slurm 24.11.5 but ...; Slurm's generic \
         selection places every job (rebuild the plugin for this Slurm release)\n\n"
    ));
    assert!(prometheus(&off).contains("\nnvl72_rack_placement_off 1\n"));
}

#[test]
fn prometheus_text_format() {
    let st = compute(&config(), &live());
    let text = prometheus(&st);
    assert!(text.contains("# TYPE nvl72_rack_free_trays gauge\n"));
    assert!(text.contains("nvl72_rack_free_trays{rack=\"rack4\"} 17\n"));
    assert!(text.contains("nvl72_rack_largest_job_trays{rack=\"rack1\",segment=\"4\"} 4\n"));
    assert!(text.contains("nvl72_largest_job_trays{segment=\"0\"} 24\n"));
    assert!(text.contains("nvl72_stranded_gpus 0\n"));
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').unwrap();
        assert!(name.starts_with("nvl72_"), "{line}");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
}

fn segmented(id: u32, min_nodes: usize, segment: usize) -> PendingJob {
    PendingJob {
        segment: Some(segment),
        ..pending(id, min_nodes, 0)
    }
}

/// Each rack's cause for its stranded free trays, `None` where a waiting job can use them.
fn causes(pending: Vec<PendingJob>) -> Vec<Option<Cause>> {
    let mut l = live();
    l.pending = pending;
    compute(&config(), &l)
        .racks
        .iter()
        .map(|r| r.stranded_cause)
        .collect()
}

#[test]
fn a_rack_a_failed_tray_keeps_from_the_head_is_failed() {
    // -N 18: rack4 has 17 free and one down, a whole rack if it were healthy; rack1 (7 free,
    // one drained) and rack2 would not be whole even then.
    assert_eq!(
        causes(vec![pending(20, 18, 0)]),
        [
            Some(Cause::WholeRack),
            Some(Cause::WholeRack),
            None,
            Some(Cause::Failed)
        ]
    );
}

#[test]
fn too_few_when_no_waiting_job_fits_the_free_trays_in_total() {
    // 26 trays are free; -N 30 needs more wherever they are.
    assert_eq!(
        causes(vec![pending(20, 30, 0)]),
        [
            Some(Cause::TooFew),
            Some(Cause::TooFew),
            None,
            Some(Cause::TooFew)
        ]
    );
}

#[test]
fn remainders_no_segment_fits_and_racks_that_hold_a_piece_of_a_waiting_job() {
    // --segment=8 twice: rack4 holds both (one rack first), so rack1's 7 free trays and
    // rack2's 2 are remainders. Under best fit, rack4 and, healed, rack1 (7 free + its
    // drained tray) hold one each: rack1 is failed.
    assert_eq!(
        causes(vec![segmented(20, 16, 8)]),
        [Some(Cause::Remainder), Some(Cause::Remainder), None, None]
    );
    // --segment=12 twice: only rack4 holds one. It could take a segment, yet the job waits
    // for a second rack (rack-set); rack1 and rack2 hold none.
    assert_eq!(
        causes(vec![segmented(20, 24, 12)]),
        [
            Some(Cause::Remainder),
            Some(Cause::Remainder),
            None,
            Some(Cause::RackSet)
        ]
    );
}

/// Each busy rack's clearing cost (its jobs, and the GPU-hours they have run), cheapest
/// first: rack2's one 16-tray job started 30 minutes ago costs 32 GPU-hours, less than
/// rack1's 10-tray job of two hours (80) or rack3's 18-tray job of an hour (72).
#[test]
fn the_cost_of_clearing_each_rack_is_shown_cheapest_first() {
    let mut l = live();
    l.now = 100_000;
    for (id, trays, age) in [(7, 10, 7200), (8, 16, 1800), (9, 18, 3600)] {
        let started = Some(l.now - age);
        l.running.insert(id, RunningJob { started, trays });
    }
    let st = compute(&config(), &l);
    let cost: Vec<(usize, f64)> = st
        .racks
        .iter()
        .map(|r| (r.clearing_jobs, r.clearing_gpu_hours))
        .collect();
    assert_eq!(cost, [(1, 80.0), (1, 32.0), (1, 72.0), (0, 0.0)]);
    let text = render(&st);
    assert!(
        text.contains(
            "to clear a rack by preemption (its jobs, GPU-hours run), cheapest first: \
             rack2 1 job 32.0 GPU-h; rack3 1 job 72.0 GPU-h; rack1 1 job 80.0 GPU-h, 1 trays out\n"
        ),
        "{text}"
    );
    let metrics = prometheus(&st);
    assert!(
        metrics.contains("nvl72_rack_clearing_jobs{rack=\"rack4\"} 0\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("nvl72_rack_clearing_gpu_hours{rack=\"rack2\"} 32.000\n"),
        "{metrics}"
    );
}
