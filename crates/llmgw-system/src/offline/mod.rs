//! Offline sites, the part done on real files: bundles made from the
//! publisher and imported into a mirror ([`bundle`]), and llmgw's own release
//! archives a bundle can carry ([`installer`]). What a bundle carries, its
//! manifest and the checksums offline wants trust are the core's
//! (`llmgw_core::offline`).
//!
//! Uses: `files`.

pub mod bundle;
pub mod installer;
