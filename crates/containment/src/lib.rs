//! Path containment decided on canonical targets.
