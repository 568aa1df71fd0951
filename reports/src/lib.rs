//! # reports — pictures and traces from a Timeline (not built yet).
