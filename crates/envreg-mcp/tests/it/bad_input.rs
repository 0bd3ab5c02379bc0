//! Bad input over the wire, from real clients: malformed JSON-RPC (stdio and HTTP), an
//! unknown method, wrong argument types, an argument over 1 MiB, a body over the HTTP
//! limit, a client that disconnects while an approval prompt is open, and saves racing
//! a hand edit of the same file. Each gets a clear error; the server keeps serving;
//! nothing is half written. See tests/py/bad_input.py.

use crate::support;

#[test]
fn bad_input_over_the_wire() {
    let output = support::run_python("bad_input.py", &[]);
    assert!(support::assert_all_passed(&output) >= 5);
}
