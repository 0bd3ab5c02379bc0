//! Records the git commit this binary is built from (see crates/build-commit).
fn main() {
    build_commit::emit();
}
