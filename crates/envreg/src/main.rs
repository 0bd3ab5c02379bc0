//! The `envreg` binary: everything lives in the library (`lib.rs`).

fn main() -> std::process::ExitCode {
    envreg::main()
}
