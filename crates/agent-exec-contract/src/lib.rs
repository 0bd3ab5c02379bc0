//! The execution contract: types, backend trait, resolver and conformance suite.
