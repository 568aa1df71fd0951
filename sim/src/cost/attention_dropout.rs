//! What dropout inside a fused attention kernel costs: the kernel's time with
//! dropout over its time without, by direction and sequence length.
//!
//! Source: the FlashAttention paper's appendix (Dao et al. 2022, arXiv
//! 2205.14135 v2, Appendix E.6, Tables 15 and 16 forward, 18 and 19
//! backward, without and with dropout, no mask): FlashAttention v1 on one
//! A100 40GB, batch 16, 8 heads of 64, fp16, rows also in
//! `validation/kernels/flashattention-a100-attention.csv`. From 1k tokens up
//! dropout makes the kernel 1.15–1.25 times as long (the random numbers of
//! every kept score are drawn in the kernel); shorter rows are a few tens of
//! microseconds, printed to 0.01 ms, and are not used. Between tabulated
//! lengths the ratio is linear in log₂ of the sequence length; outside them
//! the nearest one holds.
//!
//! Carried as it is to every GPU and fused kernel (cuDNN's on Hopper, which
//! Transformer Engine runs, draws its numbers in the kernel the same way): an
//! assumption, not a measurement of those kernels; issue 38 is to measure it.

/// (sequence length, forward ms, forward with dropout ms, backward ms,
/// backward with dropout ms): the appendix rows of 1k tokens and more.
pub(crate) const FLASH_ATTENTION_DROPOUT_ROWS: [(u64, f64, f64, f64, f64); 7] = [
    (1024, 0.68, 0.83, 1.62, 1.86),
    (2048, 2.4, 2.81, 5.45, 6.5),
    (4096, 8.42, 10.38, 21.57, 26.21),
    (8192, 33.54, 41.63, 84.75, 104.27),
    (16384, 134.03, 167.01, 336.0, 416.1),
    (32768, 535.95, 668.74, 1338.56, 1661.92),
    (65536, 2147.05, 2678.11, 5343.19, 6643.01),
];

/// How many times as long a fused attention kernel of `seq_len` runs with
/// dropout as without, `backward` or forward.
pub fn dropout_time_ratio(seq_len: u64, backward: bool) -> f64 {
    let ratio = |row: &(u64, f64, f64, f64, f64)| {
        if backward {
            row.4 / row.3
        } else {
            row.2 / row.1
        }
    };
    let rows = &FLASH_ATTENTION_DROPOUT_ROWS;
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    if seq_len <= first.0 {
        return ratio(first);
    }
    if seq_len >= last.0 {
        return ratio(last);
    }
    let upper = rows
        .iter()
        .position(|row| row.0 >= seq_len)
        .expect("seq_len is below the last row");
    let (lo, hi) = (&rows[upper - 1], &rows[upper]);
    super::seq_len_table::between_in_log2((lo.0, ratio(lo)), (hi.0, ratio(hi)), seq_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constants are the validation table's FlashAttention rows.
    #[test]
    fn rows_are_the_appendix_rows_in_the_validation_table() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../validation/kernels/flashattention-a100-attention.csv"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let ms = |pass: &str, dropout: &str, seq: u64| -> f64 {
            text.lines()
                .map(|line| line.split(',').collect::<Vec<_>>())
                .find(|f| {
                    f.len() == 9
                        && f[0] == "flashattention"
                        && f[1] == pass
                        && f[2] == dropout
                        && f[5] == seq.to_string()
                })
                .map(|f| f[8].parse().unwrap())
                .unwrap_or_else(|| panic!("no row {pass} {dropout} {seq}"))
        };
        for (seq, forward, forward_dropout, backward, backward_dropout) in
            FLASH_ATTENTION_DROPOUT_ROWS
        {
            assert_eq!(ms("forward", "0", seq), forward);
            assert_eq!(ms("forward", "1", seq), forward_dropout);
            assert_eq!(ms("backward", "0", seq), backward);
            assert_eq!(ms("backward", "1", seq), backward_dropout);
        }
    }

    #[test]
    fn ratio_at_between_and_beyond_the_rows() {
        assert!((dropout_time_ratio(2048, false) - 2.81 / 2.4).abs() < 1e-12);
        assert!((dropout_time_ratio(2048, true) - 6.5 / 5.45).abs() < 1e-12);
        // 2896 ≈ 2^11.5: halfway between 2k and 4k in log₂.
        let halfway = (2.81 / 2.4 + 10.38 / 8.42) / 2.0;
        let at = dropout_time_ratio(2896, false);
        assert!((at - halfway).abs() < 1e-3, "{at} vs {halfway}");
        assert_eq!(dropout_time_ratio(256, false), 0.83 / 0.68);
        assert_eq!(dropout_time_ratio(1 << 20, true), 6643.01 / 5343.19);
    }
}
