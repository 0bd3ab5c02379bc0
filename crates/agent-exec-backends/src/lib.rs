//! Agent backends behind the execution contract.
