//! arctern runtime (under construction).
