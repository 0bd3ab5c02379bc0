//! Human output: the contract's render line, then a readable body drawn from the tool's
//! JSON value.
//!
//! Decision: bodies are drawn from the JSON value (the contract's field names), not
//! from the core's Rust types. That is exactly what `--json` prints, so the two views
//! cannot disagree, and a new optional field in the core never breaks the CLI. A field
//! missing from the value is simply not shown.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

use crate::snippet;
use crate::style::{Palette, table_text};

/// The whole human view of one tool result: render line, blank line, body.
pub fn render(tool: &str, render_line: &str, value: &Value, root: &Path, p: &Palette) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", p.bold(render_line));
    let body = match tool {
        "env_list" => list(value, p),
        "env_get" => get(value),
        "env_find" => find(value, p),
        "env_resolve" => resolve(value, p),
        "env_resolve_operation" => resolve_operation(value, p),
        "env_get_context" | "env_set_context" => context(value, p),
        "env_save" => String::new(),
        "env_delete" => delete(value, p),
        "env_validate" => validate(value, root, p),
        _ => String::new(),
    };
    if !body.is_empty() {
        out.push('\n');
        out.push_str(&body);
    }
    // Warnings of every tool but validate (which draws all its diagnostics in full).
    if tool != "env_validate" {
        let mut notes = String::new();
        for key in ["warnings", "diagnostics"] {
            for d in array(value, key) {
                notes.push_str(&short_diagnostic(d, p));
            }
        }
        if let Some(n) = value.get("omittedWarnings").and_then(Value::as_u64)
            && n > 0
        {
            let _ = writeln!(notes, "… and {n} more (run `envreg validate` for all)");
        }
        if !notes.is_empty() {
            out.push('\n');
            out.push_str(&notes);
        }
    }
    out
}

fn array<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn s<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A scalar as text; objects and arrays as compact JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

/// `warning[CODE] file (path): message` on one line.
pub fn short_diagnostic(d: &Value, p: &Palette) -> String {
    let severity = s(d, "severity");
    let mut out = format!(
        "{}: {}",
        p.severity(severity, s(d, "code")),
        s(d, "message")
    );
    let file = s(d, "file");
    if !file.is_empty() {
        let _ = write!(out, " {}", p.dim(&format!("({file}{})", position(d))));
    }
    out.push('\n');
    out
}

fn position(d: &Value) -> String {
    match (d.get("line").and_then(Value::as_u64), s(d, "path")) {
        (Some(line), _) => format!(
            ":{line}:{}",
            d.get("column").and_then(Value::as_u64).unwrap_or(1)
        ),
        (None, "") => String::new(),
        (None, path) => format!(" {path}"),
    }
}

fn list(value: &Value, p: &Palette) -> String {
    let items = array(value, "items");
    if items.is_empty() {
        return String::new();
    }
    let mut table = p.table(&["KIND", "ID", "NAME", "SUMMARY"]);
    for item in items {
        table.add_row(vec![
            s(item, "kind"),
            s(item, "id"),
            s(item, "name"),
            s(item, "summary"),
        ]);
    }
    table_text(&table)
}

fn get(value: &Value) -> String {
    let yaml = s(value, "yaml");
    if yaml.ends_with('\n') || yaml.is_empty() {
        yaml.to_owned()
    } else {
        format!("{yaml}\n")
    }
}

fn find(value: &Value, p: &Palette) -> String {
    let hits = array(value, "hits");
    if hits.is_empty() {
        return String::new();
    }
    let mut table = p.table(&["KIND", "ID", "NAME", "MATCHED"]);
    for hit in hits {
        table.add_row(vec![
            s(hit, "kind"),
            s(hit, "id"),
            s(hit, "name"),
            s(hit, "field"),
        ]);
    }
    table_text(&table)
}

fn heading(out: &mut String, title: &str, p: &Palette) {
    let _ = writeln!(out, "\n{}", p.cyan(title));
}

/// `id (name)` of a `{id, name}` object, or `-`.
fn id_name(value: Option<&Value>) -> String {
    match value {
        Some(v) if v.is_object() => {
            let (id, name) = (s(v, "id"), s(v, "name"));
            if name.is_empty() || name == id {
                id.to_owned()
            } else {
                format!("{id} ({name})")
            }
        }
        _ => "-".to_owned(),
    }
}

/// Where a resolved value came from, shortest form: `ruleProfile linux-base variables.logDir`.
fn provenance_of(value: &Value, key: &str) -> String {
    let Some(entry) = value.get("provenance").and_then(|p| p.get(key)) else {
        return String::new();
    };
    array(entry, "from")
        .iter()
        .map(|f| {
            format!("{} {} {}", s(f, "kind"), s(f, "id"), s(f, "path"))
                .trim()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn resolve(value: &Value, p: &Palette) -> String {
    let mut out = String::new();
    let env = value.get("environment");
    let mut env_line = id_name(env);
    if let Some(env) = env {
        for key in ["tier", "platform"] {
            let v = s(env, key);
            if !v.is_empty() {
                let _ = write!(env_line, " · {v}");
            }
        }
    }
    let _ = writeln!(out, "{}  {env_line}", p.bold("Environment"));
    let _ = writeln!(
        out,
        "{}      {}",
        p.bold("Service"),
        id_name(value.get("service"))
    );
    let _ = writeln!(
        out,
        "{}   {}",
        p.bold("Deployment"),
        id_name(value.get("deployment"))
    );

    let hosts = array(value, "hosts");
    if !hosts.is_empty() {
        heading(&mut out, "Hosts", p);
        let mut t = p.table(&["ID", "ADDRESS", "ROLES"]);
        for h in hosts {
            let roles: Vec<String> = array(h, "roles").iter().map(scalar).collect();
            t.add_row(vec![
                s(h, "id").to_owned(),
                s(h, "address").to_owned(),
                roles.join(", "),
            ]);
        }
        out.push_str(&table_text(&t));
    }
    if let Some(paths) = value.get("paths").and_then(Value::as_object)
        && !paths.is_empty()
    {
        heading(&mut out, "Paths", p);
        let mut t = p.table(&["NAME", "PATH", "VALUES FROM"]);
        for (name, v) in paths {
            t.add_row(vec![
                name.clone(),
                scalar(v),
                provenance_of(value, &format!("paths.{name}")),
            ]);
        }
        out.push_str(&table_text(&t));
    }
    let logs = array(value, "logSources");
    if !logs.is_empty() {
        heading(&mut out, "Log sources", p);
        let mut t = p.table(&["ID", "PATH", "FORMAT"]);
        for l in logs {
            t.add_row(vec![s(l, "id"), s(l, "path"), s(l, "format")]);
        }
        out.push_str(&table_text(&t));
    }
    let classes = array(value, "classLocations");
    if !classes.is_empty() {
        heading(&mut out, "Class locations", p);
        for c in classes {
            let _ = writeln!(out, "  {}", scalar(c));
        }
    }
    variables_table(&mut out, "Variables", value.get("variables"), p);
    let creds = array(value, "credentials");
    if !creds.is_empty() {
        heading(&mut out, "Credentials", p);
        let mut t = p.table(&["REF", "CONFIGURED", "SOURCE"]);
        for c in creds {
            let configured = match c.get("configured") {
                Some(Value::Bool(true)) => p.green("yes"),
                Some(Value::Bool(false)) => p.yellow("no"),
                _ => "-".to_owned(),
            };
            t.add_row(vec![
                s(c, "ref").to_owned(),
                configured,
                s(c, "source").to_owned(),
            ]);
        }
        out.push_str(&table_text(&t));
    }
    out.trim_start_matches('\n').to_owned()
}

fn variables_table(out: &mut String, title: &str, vars: Option<&Value>, p: &Palette) {
    let Some(vars) = vars.and_then(Value::as_object) else {
        return;
    };
    if vars.is_empty() {
        return;
    }
    heading(out, title, p);
    let mut t = p.table(&["NAME", "VALUE"]);
    for (k, v) in vars {
        t.add_row(vec![k.clone(), scalar(v)]);
    }
    out.push_str(&table_text(&t));
}

fn resolve_operation(value: &Value, p: &Palette) -> String {
    let mut out = String::new();
    let requested = value
        .get("requested")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let target: Vec<String> = [
        ("environment", "environmentId"),
        ("service", "serviceId"),
        ("deployment", "deploymentId"),
    ]
    .iter()
    .filter_map(|(label, key)| {
        requested
            .get(*key)
            .and_then(Value::as_str)
            .map(|v| format!("{label} {v}"))
    })
    .collect();
    let _ = writeln!(out, "{}  {}", p.bold("Requested"), target.join(" · "));
    let _ = writeln!(
        out,
        "{}    {} (match level {})",
        p.bold("Binding"),
        s(value, "matchedBindingId"),
        s(value, "matchLevel")
    );
    if let Some(skill) = value.get("skill") {
        let available = match skill.get("available") {
            Some(Value::Bool(true)) => p.green("available"),
            Some(Value::Bool(false)) => p.red("not available"),
            Some(other) => p.yellow(&format!("availability {}", scalar(other))),
            None => String::new(),
        };
        let mut extra = Vec::new();
        for key in ["source", "provider"] {
            let v = s(skill, key);
            if !v.is_empty() {
                extra.push(format!("{key} {v}"));
            }
        }
        let _ = writeln!(
            out,
            "{}      {} — {available}{}",
            p.bold("Skill"),
            s(skill, "name"),
            if extra.is_empty() {
                String::new()
            } else {
                format!(" ({})", extra.join(", "))
            }
        );
    }
    if let Some(policy) = value.get("policy") {
        let approval = match policy.get("requiresApproval") {
            Some(Value::Bool(true)) => p.yellow("approval required"),
            _ => "no approval needed".to_owned(),
        };
        let production = match policy.get("allowProduction") {
            Some(Value::Bool(true)) => "allowed in production",
            _ => "not allowed in production",
        };
        let _ = writeln!(out, "{}     {approval} · {production}", p.bold("Policy"));
    }
    variables_table(&mut out, "Parameters", value.get("parameters"), p);
    out
}

fn context(value: &Value, p: &Palette) -> String {
    let persisted = match value.get("persisted") {
        Some(Value::Bool(false)) => " (not persisted: kept for this process only)",
        _ => "",
    };
    format!(
        "{} {}{persisted}\n",
        p.bold("Session"),
        s(value, "sessionId")
    )
}

fn delete(value: &Value, p: &Palette) -> String {
    let blockers = array(value, "blockers");
    if blockers.is_empty() {
        return match value.get("deleted") {
            Some(Value::Bool(false)) => {
                "Nothing refers to it; rerun with --confirm to delete it.\n".to_owned()
            }
            _ => String::new(),
        };
    }
    let mut table = p.table(&["KIND", "ID", "FIELD", "WHY"]);
    for b in blockers {
        table.add_row(vec![
            s(b, "kind"),
            s(b, "id"),
            s(b, "path"),
            s(b, "message"),
        ]);
    }
    format!("Referenced by:\n{}", table_text(&table))
}

fn validate(value: &Value, root: &Path, p: &Palette) -> String {
    let mut out = String::new();
    if let Some(counts) = value.get("counts").and_then(Value::as_object) {
        let parts: Vec<String> = counts
            .iter()
            .map(|(k, v)| format!("{k} {}", scalar(v)))
            .collect();
        let _ = writeln!(out, "{} {}", p.bold("Records:"), parts.join(", "));
    }
    // Errors first, then warnings, then notes: what blocks comes before what informs.
    let mut diagnostics: Vec<&Value> = array(value, "diagnostics").iter().collect();
    diagnostics.sort_by_key(|d| match s(d, "severity") {
        "error" => 0,
        "warning" => 1,
        _ => 2,
    });
    for d in diagnostics {
        out.push('\n');
        out.push_str(&snippet::render_diagnostic(d, root, p));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Palette = Palette { color: false };

    #[test]
    fn list_draws_a_table_under_the_render_line() {
        let value = json!({ "items": [
            { "kind": "environment", "id": "dev", "name": "Development", "summary": "dev · 1 host" }
        ], "warnings": [] });
        let out = render("env_list", "1 environment.", &value, Path::new("."), &PLAIN);
        assert!(out.starts_with("1 environment.\n\n"), "{out}");
        assert!(out.contains("Development"), "{out}");
        assert!(out.contains("dev · 1 host"), "{out}");
    }

    #[test]
    fn warnings_follow_the_body_with_their_file() {
        let value = json!({ "items": [], "warnings": [
            { "severity": "warning", "code": "CREDENTIAL_MISSING", "message": "kube-prod is not set",
              "file": "environments/prod.yaml", "path": "credentials[0]" }
        ], "omittedWarnings": 3 });
        let out = render("env_list", "0 records.", &value, Path::new("."), &PLAIN);
        assert!(out.contains(
            "warning[CREDENTIAL_MISSING]: kube-prod is not set (environments/prod.yaml credentials[0])"
        ), "{out}");
        assert!(out.contains("and 3 more"), "{out}");
    }

    #[test]
    fn missing_fields_are_left_out_not_invented() {
        let out = render(
            "env_resolve",
            "Resolved x.",
            &json!({}),
            Path::new("."),
            &PLAIN,
        );
        assert!(out.contains("Environment  -"), "{out}");
        assert!(!out.contains("Hosts"), "{out}");
    }
}
