//! (owned by another engineer; filled in by them)
