//! The operations, one module per side. Each implements [`crate::rpc::Op`] for the
//! protocol's RPC marker type.

mod agent;
mod claim;
mod filer;
mod read;
mod session;
mod stages;

pub use claim::ClaimQueue;
