//! Streamable HTTP transport (under construction).
