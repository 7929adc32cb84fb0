//! The admin commands of `nvl72`: `status` (live rack view), and the file tools that work
//! on the plugin's own configuration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use nvl72_admin::check::release::{self, ReleaseInput};
use nvl72_admin::check::{self, CheckInput};
use nvl72_admin::discover;
use nvl72_admin::status::{self, gather};
use nvl72_engine::config::{self, Config};

#[derive(Args)]
pub struct StatusArgs {
    /// Directory holding topology.toml (or topology.conf) [default: $SLURM_CONF's
    /// directory, else /etc/slurm]
    #[arg(long, value_name = "DIR")]
    config: Option<PathBuf>,
    /// Print JSON instead of the table
    #[arg(long)]
    json: bool,
    /// Redraw every SECONDS until interrupted
    #[arg(long, value_name = "SECONDS")]
    watch: Option<u64>,
    /// Also write the figures in node_exporter's textfile format to FILE (atomically)
    #[arg(long, value_name = "FILE")]
    prometheus: Option<PathBuf>,
}

#[derive(Args)]
pub struct CheckArgs {
    /// topology.toml or topology.conf to check, or a directory to look in as the plugin
    /// does [default: slurm.conf's directory]
    topology: Option<PathBuf>,
    /// slurm.conf [default: $SLURM_CONF, else /etc/slurm/slurm.conf]
    #[arg(long, value_name = "FILE")]
    slurm_conf: Option<PathBuf>,
    /// gres.conf [default: gres.conf next to slurm.conf, when it exists]
    #[arg(long, value_name = "FILE")]
    gres_conf: Option<PathBuf>,
    /// Check this plugin (a libtopology_nvl72.so not yet installed) against slurmctld's Slurm
    /// release, instead of the installed topology_nvl72.so in PluginDir
    #[arg(long, value_name = "FILE")]
    plugin: Option<PathBuf>,
}

/// Exit status: 0 no error (warnings allowed), 1 errors found, 2 the command itself failed.
pub fn check(a: &CheckArgs) -> Result<i32, String> {
    let slurm_conf = a.slurm_conf.clone().unwrap_or_else(|| {
        std::env::var_os("SLURM_CONF")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/etc/slurm/slurm.conf".into())
    });
    let mut input = CheckInput::new(slurm_conf);
    if let Some(t) = &a.topology {
        input.topology = t.clone();
    }
    input.gres_conf = a.gres_conf.clone();
    let scontrol = release::ask_scontrol();
    // 25.05 and later (the ctx interface) build their topologies from topology.yaml.
    // Without a running or installed Slurm: the release this `nvl72` was built for.
    let built_for = release::Release::parse(option_env!("SLURM_PIN").unwrap_or("24.11.5"));
    input.reads_topology_yaml = scontrol
        .release_or(built_for)
        .is_some_and(|r| r.reads_topology_yaml());
    input.release = Some(ReleaseInput {
        plugin: a.plugin.clone(),
        scontrol,
    });
    input.show_topology = release::ask_show_topology();
    input.held_jobs = nvl72_admin::status::gather::held_jobs();
    let report = check::check(&input);
    print!("{}", report.render());
    eprintln!("{}", report.summary());
    Ok(report.exit_code())
}

#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct DiscoverSource {
    /// A directory with one `nvidia-smi -q` output per node, named after the node
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// `nvidia-smi -q` of many nodes as pdsh/clush print it (`host: line`); `-` for stdin
    #[arg(long, value_name = "FILE")]
    stream: Option<PathBuf>,
    /// `sinfo -N -h -o "%N %f"` output whose node features carry `clique=<uuid>.<id>`;
    /// `-` for stdin
    #[arg(long, value_name = "FILE")]
    features: Option<PathBuf>,
}

#[derive(Args)]
pub struct DiscoverArgs {
    #[command(flatten)]
    source: DiscoverSource,
    #[arg(long, default_value_t = 18)]
    trays_per_rack: u32,
    #[arg(long, default_value_t = 4)]
    gpus_per_tray: u32,
    /// Write topology.toml here instead of standard output
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

fn read_input(path: &Path) -> Result<String, String> {
    if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Exit status: 0 clean, 1 the file was written but has findings of severity error.
pub fn discover(a: &DiscoverArgs) -> Result<i32, String> {
    let nodes = match (&a.source.dir, &a.source.stream, &a.source.features) {
        (Some(dir), _, _) => discover::from_dir(dir).map_err(|e| e.to_string())?,
        (_, Some(stream), _) => discover::from_stream(&read_input(stream)?),
        (_, _, Some(features)) => discover::from_features(&read_input(features)?),
        _ => return Err("give --dir, --stream or --features".into()),
    };
    let found = discover::discover(&nodes, a.trays_per_rack, a.gpus_per_tray);
    for f in found.findings() {
        eprintln!("{f}");
    }
    let toml = found.to_toml().map_err(|e| e.to_string())?;
    match &a.output {
        Some(path) => crate::output::write_file(path, toml)?,
        None => print!("{toml}"),
    }
    let trays: usize = found.racks().iter().map(|r| r.nodes.len()).sum();
    eprintln!(
        "{} racks, {trays} trays from {} nodes",
        found.racks().len(),
        nodes.len()
    );
    Ok(i32::from(found.has_errors()))
}

/// The directory the plugin reads its racks from, as the plugin finds it.
fn config_dir(arg: Option<&Path>) -> PathBuf {
    arg.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::var_os("SLURM_CONF")
            .and_then(|c| Path::new(&c).parent().map(Path::to_path_buf))
            .unwrap_or_else(|| "/etc/slurm".into())
    })
}

pub fn status(a: &StatusArgs) -> Result<(), String> {
    let config: Config =
        config::load_dir(&config_dir(a.config.as_deref())).map_err(|e| e.to_string())?;
    loop {
        let live = gather::live()?;
        let st = status::Status {
            placement_off: gather::placement_off(),
            ..status::compute(&config, &live)
        };
        if let Some(path) = &a.prometheus {
            crate::output::write_file(path, status::prometheus(&st))?;
        }
        let text = if a.json {
            serde_json::to_string_pretty(&st).map_err(|e| e.to_string())? + "\n"
        } else {
            status::render(&st)
        };
        match a.watch {
            None => {
                print!("{text}");
                return Ok(());
            }
            Some(secs) => {
                // Home and clear, then the new view: a live dashboard in a terminal.
                print!("\x1b[H\x1b[2J{text}");
                std::thread::sleep(Duration::from_secs(secs.max(1)));
            }
        }
    }
}
