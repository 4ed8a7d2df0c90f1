//! Parsers of what real tools print: `ldd`, `llama-server --list-devices`,
//! `llama-bench`'s rows and error lines, the package managers' queries.
//! Pure functions of text, shared by the real machine and the simulated one
//! (which prints in the same formats), and total: any input gives an
//! answer, never a panic.
//!
//! Pure core. Uses: `system` (the command lines of the package managers'
//! queries).

pub mod bench;
pub mod devices;
pub mod ldd;
pub mod packages;
