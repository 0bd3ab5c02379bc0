//! The `command` backend: any program from config, driven through the execution
//! contract. (Implementation lands with the runtime's process-tree API.)
