//! `spindle report FILE… -o report.html`: one self-contained HTML page (inline SVG and CSS,
//! no network) of results files, with the experiment and the recorded verdicts of paper
//! reproductions (docs/plot.md).
//!
//! Each FILE is, by its extension: `.toml` an experiment or sweep file (shown as written);
//! `.md` a README whose tables with a `verdict` column are the recorded verdicts (when
//! experiment files are given too and rows name them, only those rows); anything else a
//! results file (`spindle plot`'s inputs), shown as its figure and its table. A small inline
//! script checks on load that every figure was laid out with a size and holds data, and
//! records the count on `<body data-figures-rendered>` (the browser test reads it).

use crate::plot::{draw, figure, results};
use anyhow::{anyhow, bail, Context};
use clap::Args;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ReportArgs {
    /// Results files (`run`/`sweep` `--json`/`--csv`, `run --series`, `validate --out`'s
    /// `.cdf.csv`), experiment files (`.toml`) and READMEs with verdict tables (`.md`).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The HTML page (written whole or not at all).
    #[arg(short, long, value_name = "report.html")]
    output: PathBuf,
    /// The page's title.
    #[arg(long, default_value = "spindle report")]
    title: String,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Markdown's inline `code`, **bold** and *emphasis* in a table cell, as HTML.
fn inline_md(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
            continue;
        }
        let mut text = String::new();
        for (j, b) in escape(part).split("**").enumerate() {
            if j % 2 == 1 {
                let _ = write!(text, "<b>{b}</b>");
            } else {
                text.push_str(b);
            }
        }
        // Single stars left after bold are emphasis pairs.
        let mut em = String::new();
        for (j, e) in text.split('*').enumerate() {
            if j % 2 == 1 {
                let _ = write!(em, "<i>{e}</i>");
            } else {
                em.push_str(e);
            }
        }
        out.push_str(&em);
    }
    out
}

fn md_cells(line: &str) -> Vec<String> {
    let t = line.trim().trim_start_matches('|').trim_end_matches('|');
    t.split('|').map(|c| c.trim().to_string()).collect()
}

/// Tables of `text` with a `verdict` column: (header, rows).
fn verdict_tables(text: &str) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let head = lines[i].trim();
        let rule = lines[i + 1].trim();
        let is_rule = rule.starts_with('|') && rule.chars().all(|c| "|-: ".contains(c));
        if head.starts_with('|') && is_rule {
            let header = md_cells(head);
            let mut rows = Vec::new();
            let mut j = i + 2;
            while j < lines.len() && lines[j].trim().starts_with('|') {
                rows.push(md_cells(lines[j]));
                j += 1;
            }
            if header.iter().any(|h| h.eq_ignore_ascii_case("verdict")) {
                out.push((header, rows));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn html_table(header: &[String], rows: &[Vec<String>], class: &str) -> String {
    let mut s = format!("<table class=\"{class}\"><thead><tr>");
    for h in header {
        let _ = write!(s, "<th>{}</th>", inline_md(h));
    }
    s.push_str("</tr></thead><tbody>\n");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", inline_md(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
    s
}

/// A results table, saturated and unsustainable rows marked.
fn results_table(t: &results::Table) -> String {
    let sat = t.columns.iter().position(|c| c == "saturated");
    let sus = t.columns.iter().position(|c| c == "sustainable");
    let mut s = String::from("<div class=\"scroll\"><table class=\"results\"><thead><tr>");
    for c in &t.columns {
        let _ = write!(s, "<th>{}</th>", escape(c));
    }
    s.push_str("</tr></thead><tbody>\n");
    for r in t.rows.iter().take(MAX_ROWS) {
        let saturated = sat.is_some_and(|i| r[i].is_true());
        let grows = sus.is_some_and(|i| matches!(r[i], results::Cell::Bool(false)));
        let class = match (saturated, grows) {
            (true, _) => " class=\"saturated\" title=\"SATURATED: the array fell behind\"",
            (false, true) => {
                " class=\"backlog\" title=\"BACKLOG GROWS: kept up only by deferring\""
            }
            _ => "",
        };
        let _ = write!(s, "<tr{class}>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", escape(&c.to_string()));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
    if t.rows.len() > MAX_ROWS {
        let _ = writeln!(
            s,
            "<p class=\"note\">The first {MAX_ROWS} of {} rows; every row is in <code>{}</code> and in the figure.</p>",
            t.rows.len(),
            escape(&t.source)
        );
    }
    s
}

/// Rows of a results table shown on the page: a time series or a CDF has thousands, which
/// its figure shows better.
const MAX_ROWS: usize = 100;

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;font-size:.85em;margin:.8em 0}th,td{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}\
th{background:#f2f2f2}td{text-align:left}.scroll{overflow-x:auto}\
tr.saturated td{background:#fde2e1}tr.backlog td{background:#fff3cd}\
figure{margin:1em 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}\
pre{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.85em}.note{color:#555;font-size:.9em}";

/// Counts, on load, the figures laid out with a size that hold drawn data (lines or
/// markers with a size), and records it on the body; the browser test reads it back.
const SCRIPT: &str = "window.addEventListener('load',function(){var n=0;\
document.querySelectorAll('figure.plot svg').forEach(function(s){var r=s.getBoundingClientRect();\
var data=Array.prototype.filter.call(s.querySelectorAll('polyline,circle,path'),function(e){var b=e.getBBox();return b.width>0||b.height>0;});\
if(r.width>0&&r.height>0&&data.length>0){n++;}});\
document.body.setAttribute('data-figures-rendered',String(n));\
document.body.setAttribute('data-table-rows',String(document.querySelectorAll('table tbody tr').length));});";

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    crate::output::check_writable(&args.output)?;
    let is = |p: &Path, ext: &str| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext));
    let experiments: Vec<&PathBuf> = args.files.iter().filter(|p| is(p, "toml")).collect();
    let names: Vec<String> = experiments
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut body = String::new();
    let mut figures = 0usize;
    for path in &args.files {
        let shown = path.display().to_string();
        if is(path, "toml") {
            let text = std::fs::read_to_string(path).with_context(|| shown.clone())?;
            let _ = writeln!(
                body,
                "<section class=\"experiment\"><h2>Experiment <code>{}</code></h2><pre>{}</pre></section>",
                escape(&shown),
                escape(&text)
            );
        } else if is(path, "md") {
            let text = std::fs::read_to_string(path).with_context(|| shown.clone())?;
            let tables = verdict_tables(&text);
            if tables.is_empty() {
                bail!("{shown}: no table with a verdict column");
            }
            let _ = write!(
                body,
                "<section class=\"verdicts\"><h2>Recorded verdicts from <code>{}</code></h2>\n<p class=\"note\">The paper's claim beside the measured numbers, as recorded in the file (not recomputed from the results above).</p>\n",
                escape(&shown)
            );
            for (header, rows) in tables {
                let picked: Vec<Vec<String>> = rows
                    .iter()
                    .filter(|r| {
                        r.iter()
                            .any(|c| names.iter().any(|n| c.contains(n.as_str())))
                    })
                    .cloned()
                    .collect();
                let rows = if picked.is_empty() { rows } else { picked };
                body.push_str(&html_table(&header, &rows, "verdict"));
            }
            body.push_str("</section>\n");
        } else {
            let t = results::read(path)?;
            let _ = write!(
                body,
                "<section class=\"results\"><h2>Results <code>{}</code></h2>\n<p class=\"note\">{}, {} rows.</p>\n",
                escape(&shown),
                t.kind_name(),
                t.rows.len()
            );
            if t.kind != results::Kind::Validate {
                let fig = figure::build(&t, &figure::Choice::default())?;
                let svg = draw::svg(&fig).map_err(|e| anyhow!("{shown}: {e}"))?;
                let _ = writeln!(body, "<figure class=\"plot\">{svg}</figure>");
                figures += 1;
                if fig.any_saturated() {
                    body.push_str("<p class=\"note\">Hollow markers and red rows are saturated: the array fell behind the offered load, and their latencies grow with the run's length (docs/report.md).</p>\n");
                }
            }
            body.push_str(&results_table(&t));
            body.push_str("</section>\n");
        }
    }
    let files: Vec<String> = args
        .files
        .iter()
        .map(|p| format!("<code>{}</code>", escape(&p.display().to_string())))
        .collect();
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>{t}</title>\n<style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head>\n<body data-figures=\"{figures}\">\n<h1>{t}</h1>\n<p class=\"note\">Made by <code>spindle report</code> from {}. Self-contained: no network, no external files.</p>\n{body}</body></html>\n",
        files.join(", "),
        t = escape(&args.title),
    );
    crate::output::write_atomically(&args.output, html.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_tables_are_found_and_inline_markdown_rendered() {
        let md = "x\n\n| file | claim | verdict |\n|---|---|---|\n| `a.toml` | **b** < c | reproduced |\n\n| other | table |\n|---|---|\n| 1 | 2 |\n";
        let t = verdict_tables(md);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].1.len(), 1);
        assert_eq!(
            inline_md(&t[0].1[0][1]),
            "<b>b</b> &lt; c",
            "bold and escapes"
        );
        assert_eq!(inline_md("`a*b`"), "<code>a*b</code>");
    }
}
