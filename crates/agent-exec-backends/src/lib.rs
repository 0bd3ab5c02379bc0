//! Agent backends behind the execution contract.
pub mod command;
