//! The release check on small ELF files written here (a `plugin_version` symbol as the plugin
//! exports it), with the facts scontrol would give, asserting the exact lines an admin sees.

use std::path::{Path, PathBuf};

use super::*;
use crate::check::{check as check_all, CheckInput, Report};
use nvl72_engine::testkit::temp_dir;

const F: &str = "../../tests/fixtures/check";

fn release(s: &str) -> Release {
    Release::parse(s).unwrap()
}

/// A minimal ELF64 relocatable object: `.rodata` holding 4 other bytes, then `number`, and a
/// symbol table with one global datum `symbol` at the number (as the plugin exports
/// `plugin_version` after `plugin_name` and `plugin_type`). Written by hand so that the tests
/// need no ELF writer (a dev-dependency would change the features, and so the build, of the
/// `object` the crate reads with).
fn elf(symbol: &str, number: u32, big_endian: bool) -> Vec<u8> {
    let u16b = |v: u16| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u32b = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u64b = |v: u64| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut rodata = b"tpl\0".to_vec();
    rodata.extend(u32b(number));
    let strtab = format!("\0{symbol}\0").into_bytes();
    let mut symtab = vec![0u8; 24]; // the null symbol
    symtab.extend(u32b(1)); // st_name
    symtab.extend([0x11, 0]); // STB_GLOBAL, STT_OBJECT; st_other
    symtab.extend(u16b(1)); // st_shndx: .rodata
    symtab.extend(u64b(4)); // st_value
    symtab.extend(u64b(4)); // st_size
    let shstrtab = b"\0.rodata\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    // (name offset in shstrtab, type: PROGBITS, SYMTAB or STRTAB, data, link)
    let sections: [(u32, u32, &[u8], u32); 4] = [
        (1, 1, &rodata, 0),
        (9, 2, &symtab, 3),
        (17, 3, &strtab, 0),
        (25, 3, &shstrtab, 0),
    ];
    let mut body = Vec::new();
    let mut offsets = Vec::new();
    for (_, _, data, _) in &sections {
        while (64 + body.len()) % 8 != 0 {
            body.push(0);
        }
        offsets.push(64 + body.len() as u64);
        body.extend(*data);
    }
    while body.len() % 8 != 0 {
        body.push(0);
    }
    let machine = if big_endian { 21 } else { 62 }; // EM_PPC64, EM_X86_64
    let mut out = vec![0x7f, b'E', b'L', b'F', 2, if big_endian { 2 } else { 1 }, 1];
    out.resize(16, 0);
    out.extend(u16b(1)); // ET_REL
    out.extend(u16b(machine));
    out.extend(u32b(1));
    out.extend(u64b(0)); // e_entry
    out.extend(u64b(0)); // e_phoff
    out.extend(u64b(64 + body.len() as u64)); // e_shoff
    out.extend(u32b(0));
    for v in [64, 0, 0, 64, 5, 4] {
        out.extend(u16b(v)); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    }
    out.extend(body);
    out.extend([0u8; 64]); // the null section
    for ((name, kind, data, link), offset) in sections.iter().zip(offsets) {
        let symtab = *kind == 2;
        out.extend(u32b(*name));
        out.extend(u32b(*kind));
        out.extend(u64b(if *kind == 1 { 2 } else { 0 })); // sh_flags: SHF_ALLOC for .rodata
        out.extend(u64b(0)); // sh_addr
        out.extend(u64b(offset));
        out.extend(u64b(data.len() as u64));
        out.extend(u32b(*link));
        out.extend(u32b(u32::from(symtab))); // sh_info: the first global symbol
        out.extend(u64b(if symtab { 8 } else { 1 })); // sh_addralign
        out.extend(u64b(if symtab { 24 } else { 0 })); // sh_entsize
    }
    out
}

/// A PluginDir holding a topology_nvl72.so built for `built`.
fn plugin_dir(built: &str) -> PathBuf {
    let dir = temp_dir("release");
    let so = dir.join(PLUGIN_FILE);
    std::fs::write(&so, elf("plugin_version", release(built).number(), false)).unwrap();
    dir
}

fn scontrol(running: Option<&str>, installed: Option<&str>, dir: &Path) -> Scontrol {
    Scontrol {
        running: running.map(release).ok_or_else(|| {
            "scontrol show config: slurm_load_ctl_conf error: Unable to contact slurm controller \
             (connect failure)"
                .to_string()
        }),
        installed: installed.map(release),
        plugin_dir: Some(dir.display().to_string()),
    }
}

/// The lab's clean files, with the release check on these facts.
fn run(plugin: Option<PathBuf>, scontrol: Scontrol) -> Report {
    check_all(&CheckInput {
        release: Some(ReleaseInput { plugin, scontrol }),
        ..CheckInput::new(format!("{F}/good/slurm.conf"))
    })
}

fn lines(report: &Report) -> Vec<String> {
    report.problems.iter().map(ToString::to_string).collect()
}

#[test]
fn releases_decode_and_print_as_slurm_does() {
    let r = Release::from_number(0x180b05);
    assert_eq!((r.major, r.minor, r.micro), (24, 11, 5));
    assert_eq!(r.to_string(), "24.11.5");
    assert_eq!(r.number(), 0x180b05);
    assert_eq!(Release::from_number(0x1a0505).to_string(), "26.05.5");
    // The byte above the release is not part of it (Slurm masks it too).
    assert_eq!(Release::from_number(0x7f1a0505), release("26.05.5"));
    assert_eq!(release("26.05.5").number(), 0x1a0505);
    assert_eq!(release("25.11.0-0rc1"), Release::from_number(0x190b00));
    assert!(release("24.11.5") < release("26.05.5"));
    for bad in ["", "24.11", "24.x.5", "slurm 24.11.5", "24.11.300"] {
        assert_eq!(Release::parse(bad), None, "{bad}");
    }
}

#[test]
fn scontrol_outputs_are_read() {
    assert_eq!(parse_version("slurm 24.11.5\n"), Some(release("24.11.5")));
    assert_eq!(
        parse_version("slurm-wlm 24.11.5\n"),
        Some(release("24.11.5"))
    );
    assert_eq!(parse_version("sinfo 24.11.5\n"), None);
    assert_eq!(parse_version(""), None);
    let config = "Configuration data as of 2026-12-02T04:50:00\n\
                  AccountingStorageBackupHost = (null)\n\
                  PluginDir               = /usr/lib/x86_64-linux-gnu/slurm-wlm\n\
                  SLURM_VERSION           = 24.11.5\n\
                  SLURMCTLD_ADDR          = (null)\n";
    assert_eq!(
        parse_show_config(config),
        (
            Some(release("24.11.5")),
            Some("/usr/lib/x86_64-linux-gnu/slurm-wlm".into())
        )
    );
    assert_eq!(
        parse_show_config("Slurmctld(primary) at head is DOWN\n"),
        (None, None)
    );
}

#[test]
fn the_release_is_read_from_the_symbol_table_of_either_byte_order() {
    let dir = temp_dir("release");
    for big_endian in [false, true] {
        let path = dir.join(format!("big-endian-{big_endian}.so"));
        std::fs::write(&path, elf("plugin_version", 0x1a0505, big_endian)).unwrap();
        assert_eq!(
            plugin_release(&path),
            Ok(release("26.05.5")),
            "{big_endian}"
        );
    }
}

#[test]
fn a_file_that_is_no_slurm_plugin_is_named_and_said_what_it_is() {
    let dir = temp_dir("release");
    let text = dir.join("topology.toml");
    std::fs::write(&text, "[[rack]]\n").unwrap();
    let other = dir.join("other.so");
    std::fs::write(&other, elf("plugin_type", 0x180b05, false)).unwrap();
    let missing = dir.join("missing.so");

    let message = |path: &Path| {
        lines(&run(
            Some(path.to_path_buf()),
            scontrol(Some("24.11.5"), Some("24.11.5"), &dir),
        ))
    };
    assert_eq!(
        message(&text),
        [format!(
            "{}: warning: not an ELF file, so not a Slurm plugin",
            text.display()
        )]
    );
    assert_eq!(
        message(&other),
        [format!(
            "{}: warning: no plugin_version symbol, so not a Slurm plugin (Slurm refuses it)",
            other.display()
        )]
    );
    assert_eq!(
        message(&missing),
        [format!(
            "{}: warning: cannot read it: No such file or directory (os error 2)",
            missing.display()
        )]
    );
    // The installed plugin broken the same way is an error: the next start would fail.
    std::fs::copy(&other, dir.join(PLUGIN_FILE)).unwrap();
    let report = run(None, scontrol(Some("24.11.5"), Some("24.11.5"), &dir));
    assert_eq!(
        lines(&report),
        [format!(
            "{}: error: no plugin_version symbol, so not a Slurm plugin (Slurm refuses it)",
            dir.join(PLUGIN_FILE).display()
        )]
    );
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn the_installed_plugin_of_slurmctlds_release_is_clean() {
    let dir = plugin_dir("24.11.5");
    let report = run(None, scontrol(Some("24.11.5"), Some("24.11.5"), &dir));
    assert_eq!(report.render(), "");
    assert_eq!(report.exit_code(), 0);
}

/// The upgrade mistake the check exists for: the plugin package of the next release installed
/// while slurmctld (and the installed Slurm) are still the old one.
#[test]
fn an_installed_plugin_of_another_release_is_an_error_naming_both() {
    let dir = plugin_dir("26.05.5");
    let so = dir.join(PLUGIN_FILE);
    let report = run(None, scontrol(Some("24.11.5"), Some("24.11.5"), &dir));
    assert_eq!(
        lines(&report),
        [format!(
            "{}: error: the plugin was built for Slurm 26.05.5 but slurmctld runs 24.11.5: \
             Slurm refuses to load a plugin built for another release, so slurmctld would not \
             start after a restart (\"fatal: Failed to initialize topology plugin\") and \
             `scontrol reconfigure` would fail; install the package built for 24.11.5",
            so.display()
        )]
    );
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report.errors(), 1);
}

/// `--plugin FILE`: a build checked before it is installed; nothing breaks yet, so a warning.
#[test]
fn a_plugin_to_install_of_another_release_is_a_warning_naming_both() {
    let installed = plugin_dir("24.11.5");
    let candidate = plugin_dir("26.05.5").join(PLUGIN_FILE);
    let report = run(
        Some(candidate.clone()),
        scontrol(Some("24.11.5"), Some("24.11.5"), &installed),
    );
    assert_eq!(
        lines(&report),
        [format!(
            "{}: warning: the plugin was built for Slurm 26.05.5 but slurmctld runs 24.11.5: \
             Slurm refuses to load a plugin built for another release, so once it is \
             installed, slurmctld would not start after a restart (\"fatal: Failed to \
             initialize topology plugin\") and `scontrol reconfigure` would fail; install it \
             only together with Slurm 26.05.5, or use the package built for 24.11.5",
            candidate.display()
        )]
    );
    assert_eq!((report.exit_code(), report.warnings()), (0, 1));
    let same = run(
        Some(installed.join(PLUGIN_FILE)),
        scontrol(Some("24.11.5"), Some("24.11.5"), &installed),
    );
    assert_eq!(same.render(), "");
}

/// Slurm's packages upgraded, slurmctld not yet restarted: a plugin of the new release is
/// what the restart needs (a note), one of the running release is what breaks it (an error).
#[test]
fn mid_upgrade_the_installed_slurm_decides() {
    let new = plugin_dir("26.05.5");
    let report = run(None, scontrol(Some("24.11.5"), Some("26.05.5"), &new));
    assert_eq!(
        lines(&report),
        [format!(
            "{}: note: the plugin was built for Slurm 26.05.5, the installed release \
             (scontrol version), while slurmctld still runs 24.11.5: restart slurmctld to \
             finish the upgrade",
            new.join(PLUGIN_FILE).display()
        )]
    );
    assert_eq!((report.exit_code(), report.warnings()), (0, 0));

    let old = plugin_dir("24.11.5");
    let report = run(None, scontrol(Some("24.11.5"), Some("26.05.5"), &old));
    assert_eq!(
        lines(&report),
        [format!(
            "{}: error: the plugin was built for Slurm 24.11.5, which slurmctld runs now, but \
             the installed Slurm is 26.05.5 (scontrol version): Slurm refuses to load a plugin \
             built for another release, so slurmctld 26.05.5 would not start after a restart \
             (\"fatal: Failed to initialize topology plugin\") and `scontrol reconfigure` would \
             fail; install the package built for 26.05.5",
            old.join(PLUGIN_FILE).display()
        )]
    );
}

/// slurmctld down: compared with the installed Slurm, and the note says so; without scontrol
/// at all, only the note.
#[test]
fn without_slurmctld_the_note_says_what_was_not_checked() {
    let dir = plugin_dir("26.05.5");
    let so = dir.join(PLUGIN_FILE);
    let down = "slurmctld's release is not known (scontrol show config: slurm_load_ctl_conf \
                error: Unable to contact slurm controller (connect failure))";
    let report = run(None, scontrol(None, Some("24.11.5"), &dir));
    assert_eq!(
        lines(&report),
        [
            format!(
                "{}: note: {down}: compared with the installed Slurm 24.11.5 (scontrol version)",
                so.display()
            ),
            format!(
                "{}: error: the plugin was built for Slurm 26.05.5 but the installed Slurm is \
                 24.11.5 (scontrol version): Slurm refuses to load a plugin built for another \
                 release, so slurmctld would not start (\"fatal: Failed to initialize topology \
                 plugin\"); install the package built for 24.11.5",
                so.display()
            ),
        ]
    );
    let report = run(None, scontrol(None, None, &dir));
    assert_eq!(
        lines(&report),
        [format!(
            "{}: note: {down}: the plugin's release (26.05.5) was not compared with it",
            so.display()
        )]
    );
    assert_eq!(report.exit_code(), 0);
}

/// PluginDir: slurm.conf's (a search path: Slurm loads the first topology_nvl72.so along it
/// that it accepts, and skips the others before it), else slurmctld's; no plugin there is an
/// error where Slurm answers, a note where it does not.
#[test]
fn the_installed_plugin_is_found_along_plugin_dir() {
    let old = plugin_dir("24.11.5");
    let dir = plugin_dir("26.05.5");
    let empty = temp_dir("release");
    let conf_dir = temp_dir("release");
    let good = std::fs::read_to_string(format!("{F}/good/slurm.conf")).unwrap();
    let conf = conf_dir.join("slurm.conf");
    let path = format!("{}:{}:{}", empty.display(), old.display(), dir.display());
    std::fs::write(&conf, format!("{good}PluginDir={path}\n")).unwrap();
    let input = |sc: Scontrol| CheckInput {
        topology: format!("{F}/good").into(),
        release: Some(ReleaseInput {
            plugin: None,
            scontrol: sc,
        }),
        ..CheckInput::new(&conf)
    };
    let line = good.lines().count() + 1;
    let report = check_all(&input(scontrol(Some("26.05.5"), Some("26.05.5"), &empty)));
    assert_eq!(
        lines(&report),
        [format!(
            "{}: note: Slurm skips this file (built for Slurm 24.11.5) and loads {}, later in \
             PluginDir",
            old.join(PLUGIN_FILE).display(),
            dir.join(PLUGIN_FILE).display()
        )]
    );
    // None of the right release: the first one is what is wrong.
    let report = check_all(&input(scontrol(Some("25.11.7"), Some("25.11.7"), &empty)));
    assert_eq!(report.errors(), 1);
    assert!(
        report.render().starts_with(&format!(
            "{}: error: the plugin was built for Slurm 24.11.5 but slurmctld runs 25.11.7",
            old.join(PLUGIN_FILE).display()
        )),
        "{}",
        report.render()
    );

    std::fs::remove_file(dir.join(PLUGIN_FILE)).unwrap();
    std::fs::remove_file(old.join(PLUGIN_FILE)).unwrap();
    let report = check_all(&input(scontrol(Some("26.05.5"), Some("26.05.5"), &empty)));
    assert_eq!(
        lines(&report),
        [format!(
            "{}:{line}: error: no topology_nvl72.so in PluginDir {path}: Slurm cannot load \
             topology/nvl72 (\"Couldn't load specified plugin name for topology/nvl72\")",
            conf.display(),
        )]
    );
    let report = check_all(&input(scontrol(None, None, &empty)));
    assert_eq!(
        lines(&report),
        [format!(
            "{}:{line}: note: no topology_nvl72.so in PluginDir {path}: its Slurm release was \
             not checked (no scontrol answered here either)",
            conf.display(),
        )]
    );
    // Without PluginDir in slurm.conf, slurmctld's.
    let report = run(None, scontrol(Some("24.11.5"), Some("24.11.5"), &empty));
    assert_eq!(
        lines(&report),
        [format!(
            "{F}/good/slurm.conf: error: no topology_nvl72.so in PluginDir {}: Slurm cannot \
             load topology/nvl72 (\"Couldn't load specified plugin name for topology/nvl72\")",
            empty.display()
        )]
    );
}

#[test]
fn topology_yaml_is_read_from_25_05_on() {
    for (r, reads) in [
        ("24.11.5", false),
        ("25.05.0", true),
        ("25.11.2", true),
        ("26.05.5", true),
    ] {
        assert_eq!(release(r).reads_topology_yaml(), reads, "{r}");
    }
}

#[test]
fn the_checked_release_is_slurmctlds_else_the_installed_one_else_the_fallback() {
    let dir = Path::new("/nonexistent");
    let fallback = Some(release("24.11.5"));
    let both = scontrol(Some("26.05.5"), Some("25.11.7"), dir);
    assert_eq!(both.release_or(fallback), Some(release("26.05.5")));
    let installed = scontrol(None, Some("25.11.7"), dir);
    assert_eq!(installed.release_or(fallback), Some(release("25.11.7")));
    let neither = scontrol(None, None, dir);
    assert_eq!(neither.release_or(fallback), fallback);
    assert_eq!(neither.release_or(None), None);
}
