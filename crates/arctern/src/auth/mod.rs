//! Authorization (OAuth 2.1) for MCP.
//!
//! - [`client`]: the client side — discovery, registration, the authorization code flow
//!   with PKCE, token refresh and step-up, the client credentials, JWT bearer and
//!   enterprise-managed grants — as an
//!   [`Authorizer`](crate::transport::http::client::Authorizer) of the HTTP transport.

pub mod client;
