//! Flow-level network (being built).
