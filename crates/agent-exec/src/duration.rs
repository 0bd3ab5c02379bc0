//! `--deadline` values: `90s`, `5m`, `1h30m`, `500ms`, `2h`, `7d`, or plain seconds (`90`).
//! The parser lives with the config, whose `default_deadline` takes the same values.

pub use agent_exec_backends::config::parse_duration as parse;
