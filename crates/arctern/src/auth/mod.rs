//! Authorization (OAuth 2.1) for MCP (feature `auth`).
//!
//! - [`jose`]: JSON Web Keys, JWS compact signatures, JWT claims and DPoP proofs on `ring`,
//!   shared by the client and the server halves.

pub mod jose;
