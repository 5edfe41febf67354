//! One benchmark row: a named figure with its median and spread, and its native ratio.

use serde::Serialize;

/// A row of `codecell bench`: the median of its samples with the 10th and 90th percentiles, and
/// for guest-versus-native rows the native median and the ratio guest ÷ native.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Stable name (the JSON key a harness looks for).
    pub name: &'static str,
    /// Unit of `median`, `p10`, `p90` and `native`.
    pub unit: &'static str,
    /// Median of the samples; null when the figure cannot be measured here (see `note`).
    pub median: Option<f64>,
    /// 10th percentile.
    pub p10: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// How many samples.
    pub samples: usize,
    /// The same workload's median on native `python3`, when it was run.
    pub native: Option<f64>,
    /// `median / native` (or, for `*_vs_*` rows, the A/B ratio; for rows made with
    /// [`Row::relative_to`], median ÷ the baseline its note names).
    pub ratio: Option<f64>,
    /// Why a figure is missing, or how to read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Row {
    /// A row summarising `samples` (any order).
    pub fn of(name: &'static str, unit: &'static str, samples: &[f64]) -> Row {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        Row {
            name,
            unit,
            median: percentile(&sorted, 0.5),
            p10: percentile(&sorted, 0.1),
            p90: percentile(&sorted, 0.9),
            samples: sorted.len(),
            native: None,
            ratio: None,
            note: None,
        }
    }

    /// A row with no figure, and why.
    pub fn missing(name: &'static str, unit: &'static str, why: impl Into<String>) -> Row {
        Row {
            note: Some(why.into()),
            ..Row::of(name, unit, &[])
        }
    }

    /// This row compared with the native median `native` (ratio = median ÷ native).
    pub fn against(mut self, native: Option<f64>) -> Row {
        self.native = native;
        self.ratio = match (self.median, native) {
            (Some(guest), Some(native)) if native > 0.0 => Some(guest / native),
            _ => None,
        };
        self
    }

    /// This row's ratio to another row's median `baseline` (native stays unset).
    pub fn relative_to(mut self, baseline: Option<f64>) -> Row {
        self.ratio = match (self.median, baseline) {
            (Some(this), Some(base)) if base > 0.0 => Some(this / base),
            _ => None,
        };
        self
    }

    /// This row with a note.
    pub fn noted(mut self, note: impl Into<String>) -> Row {
        self.note = Some(note.into());
        self
    }
}

/// The `q` quantile of sorted `values` (nearest rank); None when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted.get(rank.min(sorted.len() - 1)).copied()
}

/// The median of `values` (any order); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    percentile(&sorted, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread_of_unsorted_samples() {
        let row = Row::of("x", "ms", &[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(row.median, Some(3.0));
        assert_eq!(row.p10, Some(1.0));
        assert_eq!(row.p90, Some(5.0));
        assert_eq!(row.samples, 5);
        let compared = row.against(Some(1.5));
        assert_eq!(compared.ratio, Some(2.0));
    }

    #[test]
    fn no_samples_is_no_figure_not_a_panic() {
        let row = Row::of("x", "ms", &[]).against(Some(1.0));
        assert_eq!((row.median, row.ratio), (None, None));
        assert_eq!(median(&[f64::NAN]), None);
    }
}
