//! Every file the tool writes where it is told to (`status --prometheus`, `discover -o`, the
//! simulator's and the replay's reports, a saved stream, a calibration) goes through
//! [`write_file`]. Only the replay's lab plumbing (its helper script in the lab's chroot, the
//! logs it streams) is written directly.
//!
//! Such files often land in shared directories: node_exporter's textfile directory is
//! commonly world-writable with the sticky bit, and the tool runs as root there. So the text
//! is written to a temporary file with an unpredictable name, created with `O_EXCL` in the
//! target's own directory (it never opens a path another user could have planted, nor follows
//! a symlink), and then renamed over the target: a reader sees the old file or the new one,
//! never half of one, and a symlink at the target's name is replaced, not followed.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// The mode of every file written: node_exporter (another user) must be able to read it.
pub const MODE: u32 = 0o644;

/// Writes `text` to `path` atomically and without following a symlink (module doc).
pub fn write_file(path: &Path, text: impl AsRef<[u8]>) -> Result<(), String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| at(&e))?;
    tmp.write_all(text.as_ref()).map_err(|e| at(&e))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(MODE))
        .map_err(|e| at(&e))?;
    // On failure the temporary file is removed when the error drops it.
    tmp.persist(path).map_err(|e| at(&e.error))?;
    Ok(())
}

/// Writes `value` as pretty JSON when `--json FILE` was given.
pub fn write_json(path: Option<&Path>, value: &impl serde::Serialize) -> Result<(), String> {
    match path {
        Some(p) => write_file(
            p,
            serde_json::to_string_pretty(value).map_err(|e| e.to_string())?,
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The files in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The name the tool used to write through (`path.with_extension("prom.tmp")`) holds a
    /// symlink to a file its planter wants overwritten: it is left alone, and so is the file.
    #[test]
    fn a_symlink_at_the_old_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let target = dir.path().join("nvl72.prom");
        let planted = target.with_extension("prom.tmp");
        symlink(&victim, &planted).unwrap();

        write_file(&target, "nvl72_stranded_gpus 0\n").unwrap();

        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_link(&planted).unwrap(), victim);
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "nvl72_stranded_gpus 0\n"
        );
        let meta = std::fs::symlink_metadata(&target).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, MODE);
        // No temporary file is left behind.
        assert_eq!(
            listing(dir.path()),
            ["nvl72.prom", "nvl72.prom.tmp", "victim"]
        );
    }

    /// A symlink at the target's own name is replaced by the new file, not written through.
    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let target = dir.path().join("topology.toml");
        symlink(&victim, &target).unwrap();

        write_file(&target, "[[rack]]\n").unwrap();

        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let meta = std::fs::symlink_metadata(&target).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "[[rack]]\n");
    }

    /// An existing file is replaced whole; a missing directory is an error naming the path.
    #[test]
    fn replaces_a_file_and_names_the_path_on_errors() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.json");
        std::fs::write(&target, "old and longer\n").unwrap();
        write_file(&target, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
        assert_eq!(listing(dir.path()), ["out.json"]);

        let missing = dir.path().join("no/such/dir/out.json");
        let err = write_file(&missing, "x").unwrap_err();
        assert!(err.starts_with(&missing.display().to_string()), "{err}");
    }
}
