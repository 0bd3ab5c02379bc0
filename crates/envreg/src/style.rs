//! Colour, only where a person looks at it: on when the stream is a terminal and
//! `NO_COLOR` is unset or empty (<https://no-color.org>), off otherwise — so pipes,
//! files and snapshot tests get plain text.

use std::io::IsTerminal;

use comfy_table::{ContentArrangement, Table, presets};
use owo_colors::OwoColorize;

#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub color: bool,
}

impl Palette {
    pub fn for_stdout() -> Self {
        Palette {
            color: std::io::stdout().is_terminal() && no_color_unset(),
        }
    }

    pub fn for_stderr() -> Self {
        Palette {
            color: std::io::stderr().is_terminal() && no_color_unset(),
        }
    }

    pub fn bold(&self, s: &str) -> String {
        if self.color {
            s.bold().to_string()
        } else {
            s.to_string()
        }
    }
    pub fn dim(&self, s: &str) -> String {
        if self.color {
            s.dimmed().to_string()
        } else {
            s.to_string()
        }
    }
    pub fn red(&self, s: &str) -> String {
        if self.color {
            s.red().bold().to_string()
        } else {
            s.to_string()
        }
    }
    pub fn yellow(&self, s: &str) -> String {
        if self.color {
            s.yellow().bold().to_string()
        } else {
            s.to_string()
        }
    }
    pub fn green(&self, s: &str) -> String {
        if self.color {
            s.green().to_string()
        } else {
            s.to_string()
        }
    }
    pub fn cyan(&self, s: &str) -> String {
        if self.color {
            s.cyan().bold().to_string()
        } else {
            s.to_string()
        }
    }

    /// `severity[CODE]`, coloured by severity the way compilers do.
    pub fn severity(&self, severity: &str, code: &str) -> String {
        let label = format!("{severity}[{code}]");
        match severity {
            "error" => self.red(&label),
            "warning" => self.yellow(&label),
            _ => self.cyan(&label),
        }
    }

    /// A table in the CLI's one look. On a terminal it wraps to the width; elsewhere it
    /// never wraps, so piped output and snapshots do not depend on a terminal size.
    pub fn table(&self, header: &[&str]) -> Table {
        let mut table = Table::new();
        table.load_preset(presets::NOTHING);
        if self.color {
            table.set_content_arrangement(ContentArrangement::Dynamic);
        } else {
            table.force_no_tty();
        }
        table.set_header(header.iter().map(|h| self.bold(h)));
        table
    }
}

/// A table as text, without the padding comfy-table leaves at line ends.
pub fn table_text(table: &Table) -> String {
    let mut out = String::new();
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn no_color_unset() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
