//! stdio transport (under construction).
