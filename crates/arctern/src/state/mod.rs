//! Request-state sealing (under construction).
