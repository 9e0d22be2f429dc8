//! arctern runtime (under construction).

pub mod state;
