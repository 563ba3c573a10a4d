//! xdsloop-client (being written).
