//! llmgw provisioning: installs inference engines (llama.cpp, vLLM, SGLang,
//! uv) on Linux GPU nodes, and simulates the installation on described
//! machines against a fake release server.
//!
//! The core is pure: [`recipe`] picks the builds a host may run, and
//! [`converge`] installs the first that is seen to work, asking the
//! [`system::System`] trait for every effect. [`system::sim`] answers as a
//! described machine would; [`simulate`] runs one host end to end against
//! [`mock_server`].

#![deny(missing_docs)]

pub mod agent;
pub mod archive;
pub mod converge;
pub mod discover;
pub mod facts;
pub mod host;
pub mod inspect;
pub mod nvidia;
pub mod offline;
pub mod parse;
pub mod pep503;
pub mod recipe;
pub mod release;
pub mod report;
pub mod retry;
pub mod sim;
pub mod strict_json;
pub mod system;
pub mod text;
