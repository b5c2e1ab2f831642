//! Python's integer division on i64, so that formulas read as in the Python model.
//!
//! Python's `//` and `%` round towards minus infinity; Rust's `/` and `%` towards zero. The
//! model divides by positive constants only, where `div_euclid`/`rem_euclid` are exactly
//! Python's. Products that could leave i64 go through i128 (Python's ints never overflow).

/// `a // b` for b > 0.
pub(crate) fn floor_div(a: i64, b: i64) -> i64 {
    debug_assert!(b > 0);
    a.div_euclid(b)
}

/// `a // b` for any non-zero b, as Python rounds it (towards minus infinity).
pub(crate) fn py_floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// `int.bit_length()` of a non-negative integer.
pub(crate) fn bit_length(x: i64) -> i64 {
    debug_assert!(x >= 0);
    64 - i64::from(x.leading_zeros())
}

/// `-(-a // b)` for b > 0: division rounding up.
pub(crate) fn ceil_div(a: i64, b: i64) -> i64 {
    -floor_div(-a, b)
}

/// `a * m // d` for d > 0, exact for any i64 a and m whose quotient fits i64.
pub(crate) fn mul_floor_div(a: i64, m: i64, d: i64) -> i64 {
    debug_assert!(d > 0);
    let q = (a as i128 * m as i128).div_euclid(d as i128);
    i64::try_from(q).expect("time arithmetic overflowed i64")
}

/// `-(-a * m // d)` for d > 0.
pub(crate) fn mul_ceil_div(a: i64, m: i64, d: i64) -> i64 {
    -mul_floor_div(-a, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_like_python() {
        assert_eq!(floor_div(-1, 1000), -1);
        assert_eq!(floor_div(1999, 1000), 1);
        assert_eq!(ceil_div(1, 1000), 1);
        assert_eq!(ceil_div(-1, 1000), 0);
        assert_eq!(ceil_div(0, 7), 0);
        assert_eq!(py_floor_div(-7, 2), -4);
        assert_eq!(py_floor_div(7, -2), -4);
        assert_eq!(py_floor_div(-7, -2), 3);
        assert_eq!(py_floor_div(6, 3), 2);
        assert_eq!(
            (bit_length(0), bit_length(1), bit_length(65535)),
            (0, 1, 16)
        );
        assert_eq!(mul_floor_div(-1, 250, 1_000_000_000), -1);
        assert_eq!(mul_ceil_div(1, 1_000_000_000, 300), 3_333_334);
        assert_eq!(
            mul_floor_div(i64::MAX / 2, 1000, 1_000_000_000),
            i64::MAX / 2 / 1_000_000
        );
    }
}
