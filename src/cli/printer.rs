//! Rendering, in one place: every report and plan a command prints, as text
//! for a person or JSON for programs ([`Format`]). The library hands values
//! over; only this file decides how they look.

use std::fmt::Write as _;

use llmgw_core::agent::{Reported, Seen};
use llmgw_core::converge::{Outcome, State, Status};
use llmgw_core::recipe::{Plan, Refusal, Source, Want};
use llmgw_core::report::Report;
use llmgw_model::host::Host;

/// Output formats of reports and plans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For a person.
    #[default]
    Text,
    /// For programs.
    Json,
}

/// A convergence's report: [`report_text`], or the JSON README.md documents.
pub fn report(report: &Report, format: Format) -> String {
    match format {
        Format::Text => report_text(report),
        Format::Json => report.to_json(),
    }
}

/// Plans: [`plans_text`], or `{"host", "plans": [...]}`.
pub fn plans(host: &Host, plans: &[(Want, Result<Plan, Refusal>)], format: Format) -> String {
    match format {
        Format::Text => plans_text(host, plans),
        Format::Json => plans_json(host, plans),
    }
}

/// The report for a person: per engine, the outcome first, then each build
/// tried or left out and why, then the binary and notes.
pub fn report_text(report: &Report) -> String {
    let mut out = format!("host: {}\n", report.host);
    for s in &report.engines {
        out.push('\n');
        engine_block(&mut out, s);
    }
    out
}

fn engine_block(out: &mut String, s: &Status) {
    let variant = s.variant.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
    let other = if s.state == State::Ready && s.version != s.want.version {
        format!(" (installed {})", s.version)
    } else {
        String::new()
    };
    let _ = writeln!(out, "{}: {}{variant}{other}", s.want, s.state.as_str());
    // The builds below say why each failed; an unsupported or not_here
    // want's reason is its detail.
    if s.attempts.is_empty() || matches!(s.state, State::Unsupported | State::NotHere) {
        let _ = writeln!(out, "  {}", s.detail);
    }
    let width = s.attempts.iter().map(|a| a.variant.len()).max().unwrap_or(0);
    for a in &s.attempts {
        let what = match a.outcome {
            Outcome::LeftOut => "left out",
            o => o.as_str(),
        };
        let _ = writeln!(out, "  - {:<width$}  {what}: {}", a.variant, a.reason);
    }
    if let Some(b) = &s.binary {
        let _ = writeln!(out, "  binary: {b}");
    }
    if let Some(n) = &s.note {
        let _ = writeln!(out, "  note: {n}");
    }
}

/// The plans as JSON: `{"host": NAME, "plans": [{"want", "state", …}]}`, final newline.
fn plans_json(host: &Host, plans: &[(Want, Result<Plan, Refusal>)]) -> String {
    let v: Vec<serde_json::Value> = plans.iter().map(|(w, p)| json(w, p)).collect();
    let doc = serde_json::json!({"host": host.name, "plans": v});
    format!("{}\n", serde_json::to_string_pretty(&doc).expect("plans serialize"))
}

fn json(w: &Want, p: &Result<Plan, Refusal>) -> serde_json::Value {
    match p {
        Ok(plan) => serde_json::json!({
            "want": w.to_string(), "state": "candidates",
            "candidates": plan.candidates, "excluded": plan.excluded, "notes": plan.notes,
        }),
        Err(Refusal::NotHere { reason }) => {
            serde_json::json!({"want": w.to_string(), "state": "not_here", "reason": reason})
        }
        Err(Refusal::Unsupported { reason, excluded }) => serde_json::json!({
            "want": w.to_string(), "state": "unsupported", "reason": reason, "excluded": excluded,
        }),
    }
}

/// Where a build comes from, in a few words.
fn source(s: &Source) -> String {
    match s {
        Source::Archives { assets, .. } => assets.join(" + "),
        Source::Python(env) => {
            let mut what: Vec<String> =
                env.wheel.iter().map(|w| format!("{}…{} from {} {}", w.prefix, w.suffix, w.repo, w.tag)).collect();
            what.extend(env.requirements.iter().cloned());
            if let Some(x) = &env.extra_index {
                what.push(format!("{} from {}", x.packages.join(", "), x.name));
            }
            format!("Python {} environment by uv: {}", env.python, what.join("; "))
        }
    }
}

/// The plans for a person: per want, the candidates and why each other build is left out.
pub fn plans_text(host: &Host, plans: &[(Want, Result<Plan, Refusal>)]) -> String {
    let mut out = format!("host: {}\n", host.name);
    for (w, p) in plans {
        let _ = writeln!(out, "\n{w}");
        match p {
            Ok(plan) => {
                let _ = writeln!(out, "  candidates, best first:");
                for (i, b) in plan.candidates.iter().enumerate() {
                    let _ = writeln!(out, "    {}. {} ({})", i + 1, b.variant, source(&b.source));
                }
                if !plan.excluded.is_empty() {
                    let _ = writeln!(out, "  left out:");
                    for e in &plan.excluded {
                        let _ = writeln!(out, "    - {}: {}", e.variant, e.reason);
                    }
                }
                // The plan's notes, then each candidate's own (a version
                // substituted for the one asked), each once: what simulate says.
                let mut said: Vec<&str> = Vec::new();
                for n in plan.notes.iter().chain(plan.candidates.iter().filter_map(|b| b.note.as_ref())) {
                    if !said.contains(&n.as_str()) {
                        said.push(n);
                        let _ = writeln!(out, "  note: {n}");
                    }
                }
            }
            Err(Refusal::NotHere { reason }) => {
                let _ = writeln!(out, "  not here: {reason}");
            }
            Err(Refusal::Unsupported { reason, .. }) => {
                let _ = writeln!(out, "  unsupported: {reason}");
            }
        }
    }
    out
}

/// The engines a node can run ([`llmgw_core::agent::Reported`]): [`engines_text`],
/// or `{"engines": [...]}`, each entry with its keys in the status file's order.
pub fn engines(reported: &[Reported], format: Format) -> String {
    /// `{"engines": [Reported…]}`: the status file's type, keys in its order.
    #[derive(serde::Serialize)]
    struct Engines<'a> {
        engines: &'a [Reported],
    }
    match format {
        Format::Text => engines_text(reported),
        Format::Json => {
            let mut s =
                serde_json::to_string_pretty(&Engines { engines: reported }).expect("a report always serializes");
            s.push('\n');
            s
        }
    }
}

/// The report for a person: one line per engine,
/// `llama.cpp  b10850  (installed)`, or a line saying there is none.
pub fn engines_text(report: &[Reported]) -> String {
    if report.is_empty() {
        return "no engine: nothing installed and seen to run, nothing configured that answers\n".into();
    }
    let width = report.iter().map(|r| r.engine.as_str().len()).max().unwrap_or(0);
    let mut out = String::new();
    for r in report {
        let seen = match r.seen {
            Seen::Installed => "installed and seen to run",
            Seen::Configured => "named in the configuration",
            Seen::NotAnswering => "named in the configuration; does not answer its version command",
        };
        let versions = if r.versions.is_empty() { "-".to_string() } else { r.versions.join(", ") };
        let _ = writeln!(out, "{:<width$}  {versions}  ({seen})", r.engine.as_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use llmgw_core::recipe::Engine;

    use super::*;

    #[test]
    fn the_engines_a_node_runs_are_one_line_each_aligned() {
        let installed = Reported { engine: Engine::LlamaCpp, versions: vec!["b10850".into()], seen: Seen::Installed };
        let configured = Reported { engine: Engine::Vllm, versions: vec!["0.20.1".into()], seen: Seen::Configured };
        assert_eq!(
            engines_text(&[installed, configured]),
            "llama.cpp  b10850  (installed and seen to run)\nvllm       0.20.1  (named in the configuration)\n"
        );
        let silent = Reported { engine: Engine::Vllm, versions: vec![], seen: Seen::NotAnswering };
        assert_eq!(
            engines_text(&[silent]),
            "vllm  -  (named in the configuration; does not answer its version command)\n"
        );
        assert!(engines_text(&[]).starts_with("no engine: "));
    }
}
