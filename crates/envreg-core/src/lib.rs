//! The environment registry core: load, validate, read, resolve and write YAML records. Knows no transport.
