//! Writing to stdout without panicking when the reader has gone away.
//!
//! `println!` panics on any write error, and a closed pipe (`envreg list | head -1`)
//! is an ordinary way for a reader to say it has seen enough. As ripgrep does, the
//! process then ends quietly with success: everything it had to do was done before it
//! printed. Any other write error (a full disk behind a redirect) is reported on stderr
//! and fails the command, because the output the user asked for is incomplete.

use std::io::{ErrorKind, Write};

/// Writes `text` to stdout as is.
pub fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if error.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("envreg: cannot write to stdout: {error}");
        std::process::exit(1);
    }
}

/// Writes `text` and a newline to stdout.
pub fn line(text: &str) {
    print(&format!("{text}\n"));
}

/// `println!` through [`line`].
macro_rules! outln {
    () => {
        $crate::stdout::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::stdout::line(&format!($($arg)*))
    };
}

/// `print!` through [`print`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::print(&format!($($arg)*))
    };
}
