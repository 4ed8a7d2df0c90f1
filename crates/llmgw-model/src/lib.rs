//! llmgw's domain model: what a machine is ([`host`]), NVIDIA's rules for
//! drivers, CUDA, SASS and PTX ([`nvidia`]), Python package names
//! ([`pep503`]), sha256 digests ([`sha256`]), strict JSON ([`strict_json`]) and text made safe for a
//! terminal ([`text`]).
//!
//! Values and rules only: no I/O, no effects, no dependency on the rest of
//! llmgw. Every other crate of the workspace builds on this one.

#![deny(missing_docs)]

pub mod host;
pub mod nvidia;
pub mod pep503;
pub mod sha256;
pub mod strict_json;
pub mod text;
