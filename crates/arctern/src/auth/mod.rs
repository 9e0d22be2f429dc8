//! Authorization (OAuth 2.1) for MCP (feature `auth`).
//!
//! - [`jose`]: JSON Web Keys, JWS compact signatures, JWT claims and DPoP proofs on `ring`,
//!   shared by the client and the server halves.
//! - [`resource`] (with the `server` and `http` features): the protected-resource side —
//!   token verification (JWT against a JWKS, RFC 7662 introspection, DPoP), RFC 9728
//!   metadata, `WWW-Authenticate` challenges, as a tower layer in front of
//!   [`StreamableHttpService`](crate::transport::http::StreamableHttpService).
//! - [`client`] (with the `client` and `http` features): the client side — discovery,
//!   registration, the authorization code flow with PKCE, token refresh and step-up, the
//!   client credentials, JWT bearer and enterprise-managed grants, DPoP — as an
//!   [`Authorizer`](crate::transport::http::client::Authorizer) of the HTTP transport.

pub mod jose;

#[cfg(all(feature = "server", feature = "http"))]
pub mod resource;

#[cfg(all(feature = "client", feature = "http"))]
pub mod client;
