//! End-to-end tests of what an admin installs and runs around the plugin: the Debian package
//! (installed into the lab's chroot with dpkg by scripts/test.sh) and `nvl72 status` against
//! the running slurmctld.

use nvl72_e2e as lab;

use lab::Lab;
use serde_json::Value;

/// The lab runs the package, as a site would install it: dpkg owns the plugin in Debian's
/// PluginDir, the package pins the exact Slurm release, `nvl72` is on the path, and
/// slurmctld and slurmd loaded that plugin.
///
/// A lab of a site's own Slurm installation (`SLURM_PREFIX`, e.g. 25.11) has no package: there
/// the plugin is in the installation's PluginDir inside the lab, `nvl72` is on the path, and
/// slurmctld and slurmd loaded that plugin.
///
/// A lab of SchedMD's packages (`SLURM_DEBS`): the plugin is in SchedMD's PluginDir,
/// `/usr/lib/x86_64-linux-gnu/slurm`, which slurmctld reports; with `PACKAGE` (the project's
/// package for SchedMD's packages) dpkg owns it and the package depends on `slurm-smd` of
/// the lab's release.
#[test]
fn the_debian_package_is_installed_and_its_plugin_loaded() {
    let load_line = "topology/nvl72: 4 racks, 72 trays, 4 GPUs per tray";
    if let Some(release) = lab::smd_release() {
        const SMD_PLUGIN_DIR: &str = "/usr/lib/x86_64-linux-gnu/slurm";
        let (lab, _g) = Lab::claim();
        let plugin = format!("{SMD_PLUGIN_DIR}/topology_nvl72.so");
        assert_plugin_dir(lab, SMD_PLUGIN_DIR);
        let smd = lab.run(&["dpkg-query", "-W", "-f", "${Version}", "slurm-smd"]);
        assert!(smd.starts_with(&format!("{release}-")), "slurm-smd {smd}");
        if std::env::var("PACKAGE").is_ok_and(|p| !p.is_empty()) {
            let status = lab.run(&[
                "dpkg-query",
                "-W",
                "-f",
                "${Status}|${Version}|${Depends}",
                "topology-nvl72",
            ]);
            assert!(status.starts_with("install ok installed|"), "{status}");
            assert!(status.contains("slurm-smd ("), "{status}");
            assert!(status.contains(&release), "{status}");
            let owner = lab.run(&["dpkg", "-S", &plugin]);
            assert!(owner.starts_with("topology-nvl72:"), "{owner}");
        }
        assert!(lab.run(&["nvl72", "--version"]).starts_with("nvl72 "));
        assert!(!lab.current_run("slurmctld.log", load_line).is_empty());
        assert!(!lab.current_run("slurmd-gb001.log", load_line).is_empty());
        return;
    }
    if let Some(prefix) = lab::slurm_prefix() {
        let (lab, _g) = Lab::claim();
        assert_plugin_dir(lab, &format!("{prefix}/lib/slurm"));
        assert!(lab.run(&["nvl72", "--version"]).starts_with("nvl72 "));
        assert!(!lab.current_run("slurmctld.log", load_line).is_empty());
        assert!(!lab.current_run("slurmd-gb001.log", load_line).is_empty());
        return;
    }
    let deb = std::env::var("PACKAGE").unwrap_or_default();
    assert!(
        !deb.is_empty(),
        "PACKAGE is not set: run the suite with scripts/test.sh, which builds the package \
         (scripts/package.sh) and installs it in the lab"
    );
    let (lab, _g) = Lab::claim();
    let status = lab.run(&[
        "dpkg-query",
        "-W",
        "-f",
        "${Status}|${Version}|${Depends}",
        "topology-nvl72",
    ]);
    // The package depends on exactly the Slurm the lab runs (its pin, slurm-headers/pins/).
    let version = lab
        .pinned_slurm_debian_version()
        .expect("a pin for the lab's Slurm release");
    assert_eq!(version, lab.slurm_debian_version());
    assert!(status.starts_with("install ok installed|"), "{status}");
    assert!(
        status.contains(&format!("slurm-wlm-basic-plugins (= {version})")),
        "{status}"
    );
    let owner = lab.run(&[
        "dpkg",
        "-S",
        "/usr/lib/x86_64-linux-gnu/slurm-wlm/topology_nvl72.so",
    ]);
    assert!(owner.starts_with("topology-nvl72:"), "{owner}");
    assert!(lab.run(&["nvl72", "--version"]).starts_with("nvl72 "));
    assert!(!lab.current_run("slurmctld.log", load_line).is_empty());
    assert!(!lab.current_run("slurmd-gb001.log", load_line).is_empty());
}

/// The plugin file is in `dir` inside the lab's chroot, and `dir` is slurmctld's PluginDir.
fn assert_plugin_dir(lab: &Lab, dir: &str) {
    let installed = lab
        .dir
        .join("rootfs")
        .join(dir.trim_start_matches('/'))
        .join("topology_nvl72.so");
    assert!(installed.is_file(), "{} missing", installed.display());
    let config = lab.run(&["scontrol", "show", "config"]);
    let plugin_dir = config
        .lines()
        .find(|l| l.starts_with("PluginDir"))
        .unwrap_or_default();
    assert!(plugin_dir.ends_with(&format!("= {dir}")), "{plugin_dir}");
}

/// `nvl72 status` on the live lab: jobs, a drained tray, a job that waits for topology.
///
/// rack1: gb[001-004] busy, gb005 drained, 13 free; rack2: gb[019-030] busy, 6 free; rack3
/// full; rack4: gb[055-070] busy, 2 free. `-N 18` waits although 21 trays are free: no rack
/// is whole. Every free GPU is then stranded (no waiting job can use it), and the largest job
/// that can start is 19 trays over rack1 and rack2.
#[test]
fn status_shows_racks_jobs_drained_trays_and_jobs_waiting_for_topology() {
    let (lab, _g) = Lab::claim();
    lab.drain("gb005");
    let a = lab.occupy("gb[001-004]");
    lab.occupy("gb[019-030]");
    lab.occupy("gb[037-054]");
    lab.occupy("gb[055-070]");
    let waiting = lab.submit(&["-N", "18", "--exclusive"]);
    lab.assert_stays_pending(waiting);
    let prom = lab.dir.join("var/jobs/nvl72.prom");
    let out = lab.run(&[
        "nvl72",
        "status",
        "--json",
        "--prometheus",
        prom.to_str().unwrap(),
    ]);
    let st: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let rack = |i: usize, k: &str| st["racks"][i][k].clone();
    assert_eq!(rack(0, "map"), "AAAA-.............", "{out}");
    assert_eq!(rack(3, "map"), "DDDDDDDDDDDDDDDD..", "{out}");
    let counts: Vec<(u64, u64)> = (0..4)
        .map(|i| {
            (
                rack(i, "free").as_u64().unwrap(),
                rack(i, "unavailable").as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, vec![(13, 1), (6, 0), (0, 0), (2, 0)]);
    assert_eq!(rack(0, "largest"), serde_json::json!([13, 12, 8, 0]));
    assert_eq!(st["largest"], serde_json::json!([19, 16, 8, 0]), "{out}");
    assert_eq!(st["stranded_gpus"], 84);
    assert_eq!(st["waiting_for_topology"][0]["id"], waiting);
    assert_eq!(st["legend"][0], serde_json::json!(["A", a]));
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(
        text.contains("nvl72_rack_free_trays{rack=\"rack1\"} 13\n"),
        "{text}"
    );
    assert!(
        text.contains("nvl72_jobs_waiting_for_topology 1\n"),
        "{text}"
    );
    // The table form an admin reads.
    let table = lab.run(&["nvl72", "status"]);
    assert!(table.contains("rack1    AAAA-............."), "{table}");
    assert!(table.contains(&format!("JobId={waiting} -N 18")), "{table}");
}

/// `nvl72 status` says why each rack's free trays are stranded, in the simulator's causes.
///
/// rack1: gb[001-008] busy, 10 free; rack2 and rack3 full; rack4: gb060 drained, 17 free.
/// `-N 18` waits: rack4 would be whole if its drained tray were healthy (`failed`), rack1 is
/// eight trays short of a whole rack (`whole-rack`). Then `-N 30` instead: 27 trays are free
/// in all, too few for it wherever they are (`too-few`). Without the plugin the `-N 18` job
/// runs across racks at once (`E2E_TOPO=none`: "job should wait", RUNNING), so nothing is
/// stranded and the test fails.
#[test]
fn status_says_why_each_racks_free_trays_are_stranded() {
    let (lab, _g) = Lab::claim();
    lab.drain("gb060");
    lab.occupy("gb[001-008]");
    lab.occupy("gb[019-036]");
    lab.occupy("gb[037-054]");
    let full_rack = lab.submit(&["-N", "18", "--exclusive"]);
    lab.assert_stays_pending(full_rack);
    use serde_json::json;
    let causes = |lab: &Lab| -> Vec<Value> {
        let out = lab.run(&["nvl72", "status", "--json"]);
        let st: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        (0..4)
            .map(|i| st["racks"][i]["stranded_cause"].clone())
            .collect()
    };
    assert_eq!(
        causes(lab),
        [
            json!("whole-rack"),
            Value::Null,
            Value::Null,
            json!("failed")
        ],
        "{}",
        lab.diagnostics()
    );
    let table = lab.run(&["nvl72", "status"]);
    assert!(table.contains("68  failed\n"), "{table}");
    assert!(
        table.contains("why stranded: failed = racks short of failed trays; whole-rack ="),
        "{table}"
    );
    lab.run(&["scancel", &full_rack.to_string()]);
    let too_big = lab.submit(&["-N", "30", "--exclusive"]);
    lab.assert_stays_pending(too_big);
    assert_eq!(
        causes(lab),
        [json!("too-few"), Value::Null, Value::Null, json!("too-few")],
        "{}",
        lab.diagnostics()
    );
}

/// A job's name and comment cannot fake what `nvl72 status` shows. Before, status read
/// `scontrol -o show job`, where user text is printed unquoted and the last `Key=` of a line
/// won: job B below (running on gb[005-006]) read as a waiting 18-tray job of 72 GPUs, and
/// the waiting job as a running job 1 on every busy tray. Now it reads JSON.
///
/// rack1: A on gb[001-004], B on gb[005-006], 12 free; rack2: gb[019-030] busy, 6 free;
/// rack3 full; rack4: gb[055-070] busy, 2 free. `-N 18` waits: no rack is whole.
#[test]
fn status_counts_jobs_whose_name_and_comment_forge_fields_as_they_are() {
    let (lab, _g) = Lab::claim();
    let a = lab.occupy("gb[001-004]");
    let b = lab.submit(&[
        "-N",
        "2",
        "--exclusive",
        "-w",
        "gb[005-006]",
        "-J",
        "forged",
        "--comment",
        "forged JobState=PENDING NumNodes=18 Reason=Resources TresPerJob=gres/gpu:72",
    ]);
    lab.running_nodes(b);
    let others = [
        lab.occupy("gb[019-030]"),
        lab.occupy("gb[037-054]"),
        lab.occupy("gb[055-070]"),
    ];
    let waiting = lab.submit(&[
        "-N",
        "18",
        "--exclusive",
        "-J",
        "forged JobId=1",
        "--comment",
        "forged JobState=RUNNING NodeList=gb[001-072] NumNodes=1",
    ]);
    lab.assert_stays_pending(waiting);
    let out = lab.run(&["nvl72", "status", "--json"]);
    let st: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(st["racks"][0]["map"], "AAAABB............", "{out}");
    let mut running: Vec<u64> = st["legend"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l[1].as_u64().unwrap())
        .collect();
    running.sort_unstable();
    let mut expected: Vec<u64> = [a, b].iter().chain(&others).map(|&j| j.into()).collect();
    expected.sort_unstable();
    assert_eq!(running, expected, "{out}");
    let waits: Vec<(u64, u64)> = st["waiting_for_topology"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["id"].as_u64().unwrap(), j["min_nodes"].as_u64().unwrap()))
        .collect();
    assert_eq!(waits, vec![(u64::from(waiting), 18)], "{out}");
    // Every free GPU is stranded: 20 free trays, and the only waiting job needs a whole rack.
    assert_eq!(st["free_trays"], 20, "{out}");
    assert_eq!(st["stranded_gpus"], 80, "{out}");
}

/// `--prometheus FILE` as root in a shared directory: a symlink planted at the temporary
/// name status used to write through (`FILE` with the extension `prom.tmp`) is not followed,
/// so the file it points at is unchanged; FILE gets the figures, readable by node_exporter.
#[test]
fn status_prometheus_file_never_follows_a_planted_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let (lab, _g) = Lab::claim();
    let dir = lab.dir.join("var/jobs/textfile");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let prom = dir.join("nvl72.prom");
    std::os::unix::fs::symlink(&victim, prom.with_extension("prom.tmp")).unwrap();
    lab.run(&["nvl72", "status", "--prometheus", prom.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(
        text.contains("nvl72_rack_free_trays{rack=\"rack1\"} 18\n"),
        "{text}"
    );
    let meta = std::fs::symlink_metadata(&prom).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `nvl72 check` with the lab's own slurm.conf, gres.conf and topology.toml: clean. Then two
/// broken copies of topology.toml: a tray in two racks (the plugin's own rule, reported with
/// the plugin's `file:line: field: message`) and a rack of trays slurm.conf does not define
/// (a cross-check); both exit with status 1.
#[test]
fn check_accepts_the_lab_and_points_at_broken_lines() {
    let (lab, _g) = Lab::claim();
    let out = lab.sl(&["nvl72", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stderr}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("/etc/slurm/topology.toml: 4 racks, 72 trays: 0 errors"),
        "{stderr}"
    );
    let good = std::fs::read_to_string(lab.etc("topology.toml")).unwrap();
    let broken = |name: &str, text: &str, needle: &str, message: &str| {
        let path = lab.dir.join("var/jobs").join(name);
        std::fs::write(&path, text).unwrap();
        let out = lab.sl(&["nvl72", "check", path.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
        let expected = format!("{}:{line}: error: {message}", path.display());
        assert!(stdout.contains(&expected), "expected {expected}\n{stdout}");
    };
    broken(
        "two-racks.toml",
        &good.replacen("gb[019-036]", "gb[018-035]", 1),
        "gb[018-035]",
        "rack[2].nodes: node gb018 is already in rack rack1",
    );
    broken(
        "unknown.toml",
        &(good.clone() + "\n[[rack]]\nname = \"rack5\"\nnodes = \"gb[073-074]\"\n"),
        "gb[073-074]",
        "rack rack5: gb[073-074] not defined by any NodeName= in slurm.conf",
    );
}

/// `nvl72 discover` on the sample `nvidia-smi -q` outputs (36 trays: a rack of 18, and a
/// rack split into cliques of 10 and 8; three broken trays) writes a topology.toml that
/// `nvl72 check` accepts against the lab's slurm.conf and that the plugin in slurmctld loads
/// unchanged: three racks with their clique ids, and `-N 8` fills the 8-tray clique.
#[test]
fn discover_writes_racks_from_clique_ids_that_the_plugin_loads() {
    let (lab, _g) = Lab::claim();
    let jobs = lab.dir.join("var/jobs");
    let stream = jobs.join("pdsh-fabric.txt");
    std::fs::copy(
        lab.repo.join("tests/fixtures/nvidia-smi/pdsh-fabric.txt"),
        &stream,
    )
    .unwrap();
    let toml = jobs.join("discovered.toml");
    let out = lab.sl(&[
        "nvl72",
        "discover",
        "--stream",
        stream.to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the broken trays are errors: {stderr}"
    );
    assert!(
        stderr.contains("error: gb005: NVLink fabric not ready"),
        "{stderr}"
    );
    assert!(
        stderr.contains("3 racks, 36 trays from 36 nodes"),
        "{stderr}"
    );
    lab.run(&["nvl72", "check", toml.to_str().unwrap()]);
    lab.restart_with(&[("TOPOLOGY_TOML", toml.to_str().unwrap())]);
    let topo = lab.run(&["scontrol", "show", "topology"]);
    assert_eq!(topo.matches("RackName=").count(), 3, "{topo}");
    assert!(
        topo.contains("RackName=rack3 RackIndex=2 Nodes=gb[029-036] Trays=8"),
        "{topo}"
    );
    assert!(
        topo.contains("Clique=c41d9e27-8b3a-4f65-a0d2-7e19b5c3f804.2"),
        "{topo}"
    );
    let job = lab.submit(&["-N", "8", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(
        nodes.first().map(String::as_str),
        Some("gb029"),
        "{nodes:?}"
    );
    assert_eq!(nodes.last().map(String::as_str), Some("gb036"), "{nodes:?}");
}

/// `nvl72 check` reads the plugin's Slurm release from its `plugin_version` symbol (without
/// loading it) and compares it with the running slurmctld's (`scontrol show config`): the
/// installed plugin is the lab's release, so no release line; a build for the other Debian
/// series checked before installing it (`--plugin`) is a warning naming both releases (exit
/// 0); a file that is no Slurm plugin is named with what it is.
///
/// The other build is `NVL72_OTHER_PLUGIN` (scripts/test.sh sets it), else the repo's build
/// of the other series: for a 24.11 lab `target/slurm-26-05/libtopology_nvl72.so`
/// (`SLURM_PIN=26.05.5 SLURM_SERIES=26.05 cargo build --profile slurm-26-05 -p topology_nvl72`), for
/// any other `target/release/libtopology_nvl72.so` (24.11).
#[test]
fn check_compares_the_plugins_slurm_release_with_slurmctlds() {
    use nvl72_admin::check::release::{self, Release};
    let (lab, _g) = Lab::claim();
    let other = std::env::var_os("NVL72_OTHER_PLUGIN")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            lab.repo.join(match lab::slurm_series().as_str() {
                "24.11" => "target/slurm-26-05/libtopology_nvl72.so",
                _ => "target/release/libtopology_nvl72.so",
            })
        });
    let built = release::plugin_release(&other).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: build the plugin for another Slurm series first (see this test's doc)",
            other.display()
        )
    });
    let (running, _) = release::parse_show_config(&lab.run(&["scontrol", "show", "config"]));
    let running: Release = running.expect("SLURM_VERSION in scontrol show config");
    assert_ne!(
        built,
        running,
        "{} is for the lab's own release",
        other.display()
    );

    let out = lab.sl(&["nvl72", "check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("topology_nvl72.so"), "{stdout}");

    let copy = lab.dir.join("var/jobs/other-topology_nvl72.so");
    std::fs::copy(&other, &copy).unwrap();
    let out = lab.sl(&["nvl72", "check", "--plugin", copy.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let expected = format!(
        "{}: warning: the plugin was built for Slurm {built} but slurmctld runs {running}: \
         Slurm refuses to load a plugin built for another release, so once it is installed, \
         slurmctld would not start after a restart (\"fatal: Failed to initialize topology \
         plugin\") and `scontrol reconfigure` would fail; install it only together with Slurm \
         {built}, or use the package built for {running}\n",
        copy.display()
    );
    assert!(stdout.contains(&expected), "expected {expected}\n{stdout}");
    assert!(stderr.contains(": 0 errors, 1 warning"), "{stderr}");

    let not_a_plugin = lab.dir.join("var/jobs/topology.toml.so");
    std::fs::copy(lab.etc("topology.toml"), &not_a_plugin).unwrap();
    let out = lab.sl(&["nvl72", "check", "--plugin", not_a_plugin.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected = format!(
        "{}: warning: not an ELF file, so not a Slurm plugin",
        not_a_plugin.display()
    );
    assert!(stdout.contains(&expected), "expected {expected}\n{stdout}");
}
