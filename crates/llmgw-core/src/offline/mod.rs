//! Offline sites: what a bundle carries ([`builds`]), bundles made from the
//! publisher and imported into a mirror ([`bundle`]), their manifest
//! ([`manifest`]), the checksums offline wants trust ([`checksums`]), and
//! llmgw's own release archives a bundle can carry too ([`installer`]).
//! The mirror's layout, from which offline wants install, is the release
//! layer's ([`crate::release::mirror`]).
//!
//! A cluster without internet is served in three steps: on a connected
//! machine `llmgw bundle create` fetches every build of the wanted versions
//! for every architecture, verified against the publisher's digests, into a
//! directory or tar with a manifest whose sha256 travels apart from it; on
//! the site `llmgw bundle import` checks the manifest against that sha256
//! and every file against the manifest before anything enters the mirror;
//! nodes then install from the mirror (`offline_base`) against checksums the
//! control plane holds (`offline_sha256`), and never contact the publisher.
//!
//! Real effects: bundles are files on the operator's machine, written and
//! read here; downloads go through [`crate::system::System`] and the
//! verified download of [`crate::release`]. Uses: `recipe` and `release`.

pub mod builds;
pub mod checksums;
pub mod manifest;
pub mod release;
