//! Checks shared by both backends on the amounts of a reservation or release.

use std::collections::BTreeMap;

use crate::StateError;

/// The amounts with each counter once, duplicates summed (saturating), sorted
/// by name; an error on a negative amount.
///
/// Summing matters for correctness: checked one by one, `cpu=600, cpu=600`
/// would both fit a counter of 1000 and overcommit it.
pub(crate) fn merged<'a>(amounts: &[(&'a str, i64)]) -> Result<Vec<(&'a str, i64)>, StateError> {
    let mut merged: BTreeMap<&str, i64> = BTreeMap::new();
    for &(counter, amount) in amounts {
        if amount < 0 {
            return Err(StateError::NegativeAmount {
                counter: counter.to_owned(),
                amount,
            });
        }
        let sum = merged.entry(counter).or_insert(0);
        *sum = sum.saturating_add(amount);
    }
    Ok(merged.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_summed_and_sorted() {
        let merged = merged(&[("mem", 5), ("cpu", 600), ("cpu", 600)]).unwrap();
        assert_eq!(merged, vec![("cpu", 1200), ("mem", 5)]);
    }

    #[test]
    fn sums_saturate() {
        let merged = merged(&[("cpu", i64::MAX), ("cpu", 1)]).unwrap();
        assert_eq!(merged, vec![("cpu", i64::MAX)]);
    }

    #[test]
    fn negative_amounts_are_rejected() {
        let result = merged(&[("cpu", 1), ("mem", -1)]);
        assert!(matches!(
            result,
            Err(StateError::NegativeAmount { counter, amount: -1 }) if counter == "mem"
        ));
    }
}
