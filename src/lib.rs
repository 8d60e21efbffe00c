//! rummy
