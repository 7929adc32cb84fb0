//! The error band `simulate` prints is what `nvl72 calibrate` computes, with this simulator,
//! from the calibration set's real replays kept in `tests/fixtures/calibration/`: a change
//! to the simulator that moves a prediction must ship the band it now earns
//! (`nvl72 calibrate tests/fixtures/calibration/*.json --write crates/sim/src/studies/calibration.json`, and
//! `--backfill easy --write crates/sim/src/studies/calibration-easy.json`).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn calibrate(extra: &[&str]) -> Value {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut reports: Vec<PathBuf> = std::fs::read_dir(repo.join("tests/fixtures/calibration"))
        .expect("the calibration set")
        .map(|e| e.unwrap().path())
        .collect();
    reports.sort();
    assert!(reports.len() >= 12, "{} replays", reports.len());
    let out = std::env::temp_dir().join(format!(
        "nvl72-calibration-{}-{}.json",
        std::process::id(),
        extra.len()
    ));
    let run = Command::new(env!("CARGO_BIN_EXE_nvl72"))
        .arg("calibrate")
        .args(&reports)
        .args(extra)
        .arg("--write")
        .arg(&out)
        .output()
        .expect("nvl72 calibrate runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let v = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    v
}

fn shipped(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sim/src/studies")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_shipped_band_is_what_the_calibration_set_gives_now() {
    assert_eq!(calibrate(&[]), shipped("calibration.json"));
    assert_eq!(
        calibrate(&["--backfill", "easy"]),
        shipped("calibration-easy.json")
    );
}
