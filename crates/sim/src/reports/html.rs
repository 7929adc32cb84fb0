//! The report an admin forwards (`nvl72 simulate --report FILE.html`): one HTML file that
//! reads offline, with no script and no link out: the verdict, what was run (the exact
//! command and the input's summary line), the side-by-side table, the simulator's error
//! band, and occupancy and queue over time as inline SVG.

use std::fmt::Write;

use html_escape::encode_text as text;

use crate::reports::report::RunReport;

/// What the page shows besides the report itself.
pub struct Page<'a> {
    pub report: &'a RunReport,
    /// The verdict as `simulate` prints it: a first line, then `- ` lines.
    pub verdict: Option<&'a str>,
    /// The command line that made the report, quoted as a shell reads it.
    pub command: &'a str,
    /// `plot::svg` of the report's policies.
    pub plot_svg: &'a str,
    /// Which build made it (`nvl72 0.1.0`) and when (`2026-12-04 23:10 UTC`).
    pub made_by: &'a str,
}

const STYLE: &str = "body{font-family:sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b;line-height:1.4}\
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}\
.made{color:#555;margin-top:0}.verdict{background:#eef5ee;border-left:4px solid #2e7d32;padding:.6rem 1rem}\
.verdict li{margin:.3rem 0}dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}\
dt{font-weight:bold}dd{margin:0}pre{background:#f4f4f4;padding:.6rem;overflow-x:auto;white-space:pre-wrap}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums}th,td{padding:.2rem .7rem;border-bottom:1px solid #e3e3e3}\
td{text-align:right}td:first-child,th:first-child{text-align:left}thead th{background:#f0f0f0}\
tr.group td{font-weight:bold;background:#fafafa}td.sub{padding-left:1.8rem}.band{color:#8a4b00}";

impl Page<'_> {
    pub fn render(&self) -> String {
        let r = self.report;
        let mut out = String::new();
        let title = format!(
            "What would topology/nvl72 have done? {} jobs of {} on {} racks",
            r.workload.jobs, r.workload.name, r.sim.racks
        );
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p class=\"made\">{}</p>\n",
            text(&title),
            text(&title),
            text(self.made_by)
        );
        self.verdict_section(&mut out);
        self.inputs_section(&mut out);
        self.table_section(&mut out);
        let _ = write!(
            out,
            "<h2>Over time</h2>\n<figure>{}</figure>\n</body>\n</html>\n",
            self.plot_svg
        );
        out
    }

    fn verdict_section(&self, out: &mut String) {
        let Some(verdict) = self.verdict else { return };
        let mut lines = verdict.lines().filter(|l| !l.trim().is_empty());
        out.push_str("<h2>Verdict</h2>\n<div class=\"verdict\">\n");
        if let Some(first) = lines.next() {
            let _ = writeln!(
                out,
                "<p>{}</p>",
                text(first.trim_start_matches("verdict: "))
            );
        }
        out.push_str("<ul>\n");
        for line in lines {
            let _ = writeln!(out, "<li>{}</li>", text(line.trim_start_matches("- ")));
        }
        out.push_str("</ul>\n</div>\n");
    }

    fn inputs_section(&self, out: &mut String) {
        out.push_str("<h2>What was run</h2>\n<dl>\n");
        for (what, line) in self.report.inputs() {
            let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", text(what), text(&line));
        }
        let _ = writeln!(
            out,
            "</dl>\n<p>The command:</p>\n<pre>{}</pre>",
            text(self.command)
        );
    }

    fn table_section(&self, out: &mut String) {
        let rows = self.report.rows();
        let mut rows = rows.iter();
        out.push_str("<h2>Side by side</h2>\n<table>\n");
        if let Some((_, names)) = rows.next() {
            out.push_str("<thead><tr><th></th>");
            for name in names {
                let _ = write!(out, "<th>{}</th>", text(name));
            }
            out.push_str("</tr></thead>\n");
        }
        out.push_str("<tbody>\n");
        for (name, cells) in rows {
            if cells.iter().all(String::is_empty) {
                let _ = writeln!(
                    out,
                    "<tr class=\"group\"><td colspan=\"{}\">{}</td></tr>",
                    cells.len() + 1,
                    text(name)
                );
                continue;
            }
            let class = if name.starts_with("  ") {
                " class=\"sub\""
            } else {
                ""
            };
            let _ = write!(out, "<tr><td{class}>{}</td>", text(name.trim()));
            for cell in cells {
                let _ = write!(out, "<td>{}</td>", text(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        for band in self.report.bands() {
            let _ = writeln!(out, "<p class=\"band\">{}</p>", text(&band));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(report: &RunReport, verdict: Option<&str>) -> String {
        Page {
            report,
            verdict,
            command: "nvl72 simulate --workload sacct 'my history.txt' --racks 4 --report r.html",
            plot_svg: "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>",
            made_by: "nvl72 test",
        }
        .render()
    }

    #[test]
    fn the_page_holds_the_verdict_the_command_every_row_and_the_plot() {
        let report = crate::run::simulation::tests::small_report();
        let html = page(
            &report,
            Some("verdict: on these jobs:\n- nvl72 <kept> more & busier\n"),
        );
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<p>on these jobs:</p>"));
        // Text is escaped: a history's names cannot break the page.
        assert!(
            html.contains("<li>nvl72 &lt;kept&gt; more &amp; busier</li>"),
            "{html}"
        );
        assert!(html.contains("--workload sacct 'my history.txt' --racks 4"));
        for (name, _) in report.rows().iter().skip(1) {
            assert!(html.contains(&*text(name.trim())), "row {name:?} missing");
        }
        assert!(html.contains("<figure><svg"));
        // Offline: nothing is fetched.
        for outside in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!html.contains(outside), "{outside}");
        }
    }

    #[test]
    fn without_a_verdict_there_is_no_verdict_section() {
        let report = crate::run::simulation::tests::small_report();
        assert!(!page(&report, None).contains("Verdict"));
    }
}
