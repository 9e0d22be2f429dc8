//! The `arctern` command.

fn main() {}
