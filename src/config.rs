//! topology.toml (placeholder, being written).
