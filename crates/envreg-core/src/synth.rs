//! Synthetic registries for benchmarks and load tests (interim: lands next).
