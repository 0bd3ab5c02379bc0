//! The envreg command-line tool.

fn main() {}
