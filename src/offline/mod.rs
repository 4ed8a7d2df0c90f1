//! Offline sites: what a bundle carries ([`builds`]), bundles made from the
//! publisher and imported into a mirror ([`bundle`]), and the mirror's
//! layout, from which offline wants install ([`mirror`]).
//!
//! A cluster without internet is served in three steps: on a connected
//! machine `llmgw bundle create` fetches every build of the wanted versions
//! for every architecture, verified against the publisher's digests, into a
//! directory or tar with a manifest whose sha256 travels apart from it; on
//! the site `llmgw bundle import` checks the manifest against that sha256
//! and every file against the manifest before anything enters the mirror;
//! nodes then install from the mirror (`offline_base`) against checksums the
//! control plane holds (`offline_sha256`), and never contact the publisher.

pub mod builds;
pub mod bundle;
pub mod mirror;
