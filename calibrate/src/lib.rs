//! # calibrate — real-hardware timing (not built yet).
