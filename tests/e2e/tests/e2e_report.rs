//! The report an admin forwards (`nvl72 simulate --report FILE.html`), opened in a real
//! headless browser (chromium, installed by scripts/install-deps.sh for the test command):
//! the page the browser built holds the verdict, the command and every row, and the
//! screenshot shows the verdict box and both policies' lines in the plot. No lab: this tests
//! the command line's output, which stock Slurm has no part in; without `--report` there is
//! no page.

use std::path::{Path, PathBuf};
use std::process::Command;

use nvl72_e2e as lab;

/// A run with waiting jobs, failures and priced splits: every section of the page has content.
const ARGS: [&str; 12] = [
    "--racks",
    "16",
    "--jobs",
    "600",
    "--seed",
    "3",
    "--mtbf",
    "500",
    "--slowdown",
    "default",
    "--no-timing",
    "--quiet",
];

/// Where the page and its screenshot stay for a person to look at (overwritten each run; one
/// folder per series, whose suites run at once).
fn out_dir() -> PathBuf {
    let dir = lab::repo()
        .join("target/e2e-report")
        .join(lab::slurm_series());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `chromium --headless` with `extra` on the page; its stdout.
fn chromium(page: &Path, extra: &[&str]) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (scripts/install-deps.sh installs it with LINT=1)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The screenshot's pixels as RGB.
fn pixels(png_path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::io::BufReader::new(std::fs::File::open(png_path).unwrap());
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    let rgb = buf[..info.line_size * info.height as usize]
        .chunks(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, rgb)
}

fn hex(c: &str) -> [u8; 3] {
    let v = u32::from_str_radix(c.trim_start_matches('#'), 16).unwrap();
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

#[test]
fn the_html_report_renders_offline_in_a_real_browser() {
    let dir = out_dir();
    let page = dir.join("whatif.html");
    let run = Command::new(lab::nvl72())
        .current_dir(lab::repo())
        .arg("simulate")
        .args(ARGS)
        .arg("--report")
        .arg(&page)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // The document the browser built: the verdict and the table as simulate printed them.
    let dom = chromium(&page, &["--dump-dom"]);
    let verdict = stdout.lines().nth(1).unwrap().trim_start_matches("- ");
    let first_words: String = verdict.chars().take(60).collect();
    assert!(dom.contains(&first_words), "{first_words}\n{dom}");
    assert!(
        dom.contains("nvl72 simulate --racks 16 --jobs 600"),
        "the command"
    );
    let table_rows = dom.matches("<tr").count();
    let printed_rows = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("nvl72"))
        .take_while(|l| !l.is_empty())
        .count();
    assert_eq!(
        table_rows, printed_rows,
        "one HTML row per printed row\n{stdout}"
    );
    assert!(dom.contains("<svg"), "the plot is inline");

    // What an admin sees: the green verdict box, and the nvl72 and block lines in the plot.
    let shot = dir.join("whatif.png");
    chromium(
        &page,
        &[
            "--window-size=1280,3400",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let (width, height, rgb) = pixels(&shot);
    assert_eq!((width, height), (1280, 3400));
    let count = |c: [u8; 3]| rgb.iter().filter(|&&p| p == c).count();
    let box_pixels = count(hex("#eef5ee"));
    assert!(box_pixels > 100_000, "verdict box: {box_pixels} pixels");
    for (policy, colour) in [("nvl72", "#1f77b4"), ("block", "#d62728")] {
        let n = count(hex(colour));
        assert!(n > 500, "{policy}'s line ({colour}): {n} pixels");
    }
    let ink = rgb.iter().filter(|p| p.iter().all(|&v| v < 100)).count();
    assert!(ink > 20_000, "text: {ink} dark pixels");
    eprintln!("screenshot: {}", shot.display());
}
