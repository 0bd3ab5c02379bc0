//! The durable execution journal: SQLite by default, PostgreSQL for a fleet.
