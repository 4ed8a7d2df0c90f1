//! llmgw's pure core: which builds a host may run ([`recipe`]), where they
//! come from ([`release`]), the installation that converges a machine on its
//! wants ([`converge`]), what a build's files really are ([`inspect`],
//! [`facts`]), a machine described from its probes ([`discover`]), offline
//! sites ([`offline`]) and the agent's loop ([`agent`]).
//!
//! Every effect goes through the [`system::System`] trait (or the narrower
//! [`discover::Probe`] and [`agent::Node`]); `clippy.toml` forbids the
//! direct calls, and this crate depends on no crate that makes them. Two
//! machines implement the trait: the real one (`llmgw-system`) and the
//! simulated one (`llmgw-sim`); both run this same convergence.
//!
//! Depends on `llmgw-model` only, of the workspace.

#![deny(missing_docs)]

pub mod agent;
pub mod archive;
pub mod converge;
pub mod discover;
pub mod facts;
pub mod inspect;
pub mod offline;
pub mod parse;
pub mod recipe;
pub mod release;
pub mod report;
pub mod retry;
pub mod system;

#[cfg(test)]
mod testing;
