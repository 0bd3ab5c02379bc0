//! The facet scope guard: tables, sentences, decisions, session state.
