//! The binary stays a position-independent executable. Linking without PIE would take
//! ~0.5 ms off every `agent-exec run` (the relocations' copy-on-write; issue 20,
//! docs/agent-exec.md) and was decided against: with aws-lc and SQLite linked in, the
//! executable must not sit at a fixed address. A build change that drops PIE fails here.

/// `e_type` of the ELF header (bytes 16–17, little-endian): 3 is a shared object,
/// which is what a PIE is; 2 a fixed-address executable.
#[test]
fn agent_exec_is_position_independent() {
    use std::io::Read as _;
    let path = env!("CARGO_BIN_EXE_agent-exec");
    let mut header = [0u8; 18];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut header))
        .unwrap_or_else(|e| panic!("cannot read the ELF header of {path}: {e}"));
    assert_eq!(&header[..4], b"\x7fELF", "{path} is not an ELF file");
    let e_type = u16::from_le_bytes([header[16], header[17]]);
    assert_eq!(
        e_type, 3,
        "{path} is not position-independent (ELF type {e_type}); keep PIE (docs/agent-exec.md, issue 20)"
    );
}
