//! Conformance fixtures.
