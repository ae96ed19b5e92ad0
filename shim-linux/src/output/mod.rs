//! cyclictest's outputs.

pub mod json;
pub mod text;
