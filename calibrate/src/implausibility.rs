//! One measurement that broke a plausibility bound, as the run's error
//! lists it ([`crate::plausibility`] finds them).

use std::fmt;

/// One measurement that broke a bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Implausibility {
    /// What was timed ("cuBLAS bf16 GEMM 8192x8192x8192").
    pub measurement: String,
    /// Its median time.
    pub time_ns: u64,
    /// The rate that time implies, with its unit ("1203.4 TFLOP/s").
    pub achieved: String,
    /// The bound it broke.
    pub bound: Bound,
}

/// Which kind of bound a measurement broke.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// Faster than the datasheet allows: an efficiency above 1.
    AboveDatasheet {
        /// The datasheet figure ("H100-SXM5-80GB datasheet dense bf16 peak 989.0 TFLOP/s").
        datasheet: String,
        /// Achieved ÷ datasheet (> 1).
        efficiency: f64,
    },
    /// Slower than any healthy machine ("0.2 of the … peak = 197.8 TFLOP/s").
    BelowFloor { floor: String },
    /// Faster than any such link can be, datasheet or not.
    AboveCeiling { ceiling: String },
}

impl fmt::Display for Implausibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Implausibility {
            measurement,
            time_ns,
            achieved,
            bound,
        } = self;
        write!(f, "{measurement}: median {time_ns} ns = {achieved}, ")?;
        match bound {
            Bound::AboveDatasheet {
                datasheet,
                efficiency,
            } => write!(
                f,
                "faster than the {datasheet} (efficiency {efficiency:.3} > 1: a timer, the datasheet or the GPU match is wrong)"
            ),
            Bound::BelowFloor { floor } => {
                write!(f, "below the plausibility floor of {floor}")
            }
            Bound::AboveCeiling { ceiling } => {
                write!(f, "above the physical ceiling of {ceiling}")
            }
        }
    }
}
