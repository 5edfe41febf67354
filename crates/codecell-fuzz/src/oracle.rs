//! The differential oracle: what native `python3` and the two guests made of one program, and
//! whether they agree.

/// What one interpreter made of a program: its stdout and the type of the exception that ended
/// it (None: it completed).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Observed {
    /// Everything the program printed.
    pub stdout: String,
    /// The exception type that ended the program, e.g. `ZeroDivisionError`; a limit or a host
    /// failure is named here too (`limit:fuel`, `host:…`), so it never passes for agreement.
    pub error: Option<String>,
}

/// A known, documented difference of the RustPython guest: matched by name, never silently.
#[derive(Debug, Clone, Copy)]
pub struct KnownDifference {
    /// Its name, as the fuzzer reports it.
    pub name: &'static str,
    /// Where it is documented.
    pub documented: &'static str,
    /// True when a disagreement between native and RustPython output is this difference.
    pub matches: fn(native: &Observed, rustpython: &Observed) -> bool,
}

/// The RustPython differences the fuzzer expects and counts apart (README, "Known RustPython
/// differences").
pub const KNOWN_RUSTPYTHON_DIFFERENCES: [KnownDifference; 1] = [KnownDifference {
    name: "libm_ulp",
    documented: "fixtures/differential/33_float_libm_precision.py",
    matches: only_floats_a_few_ulps_apart,
}];

/// Most units in the last place two floats of a `libm_ulp` difference may be apart.
const MAX_ULPS: f64 = 4.0;

/// The same exception and the same printed tokens, except floats a few ulps apart.
fn only_floats_a_few_ulps_apart(native: &Observed, rustpython: &Observed) -> bool {
    let tokens = |s: &str| -> Vec<String> {
        s.split(|c: char| c.is_whitespace() || ",()[]{}:=|'\"".contains(c))
            .filter(|t| !t.is_empty())
            .map(String::from)
            .collect()
    };
    let (a, b) = (tokens(&native.stdout), tokens(&rustpython.stdout));
    native.error == rustpython.error
        && a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x == y
                || x.contains('.')
                    && match (x.parse::<f64>(), y.parse::<f64>()) {
                        (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => {
                            (x - y).abs() <= MAX_ULPS * f64::EPSILON * x.abs().max(y.abs())
                        }
                        _ => false,
                    }
        })
}

/// How a program's three runs compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// All three agree.
    Agree,
    /// The CPython guest or RustPython differs from native python3, and no known difference
    /// explains it; the names of the guests that differ.
    Diverges(Vec<&'static str>),
    /// Only RustPython differs, by a known difference of this name.
    Known(&'static str),
}

/// Compares the guests' runs with native python3's.
pub fn compare(native: &Observed, cpython: &Observed, rustpython: &Observed) -> Verdict {
    let mut differs = Vec::new();
    if cpython != native {
        differs.push("cpython");
    }
    if rustpython != native {
        if differs.is_empty()
            && let Some(known) = KNOWN_RUSTPYTHON_DIFFERENCES
                .iter()
                .find(|k| (k.matches)(native, rustpython))
        {
            return Verdict::Known(known.name);
        }
        differs.push("rustpython");
    }
    if differs.is_empty() {
        Verdict::Agree
    } else {
        Verdict::Diverges(differs)
    }
}

/// The native runner's driver: reads one JSON object `{"code": …}` per line and writes one
/// `{"stdout": …, "error": …}` per line, each program in fresh globals with stdout captured.
/// One long-lived process runs many programs (a process per program would cost 20 ms each).
pub const NATIVE_DRIVER: &str = r#"
import io, json, sys, contextlib
out = sys.stdout
for line in sys.stdin:
    code = json.loads(line)["code"]
    buf = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "<snippet>", "exec"), {"__name__": "__main__"})
    except BaseException as e:
        error = type(e).__name__
    out.write(json.dumps({"stdout": buf.getvalue(), "error": error}) + "\n")
    out.flush()
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(stdout: &str, error: Option<&str>) -> Observed {
        Observed {
            stdout: stdout.into(),
            error: error.map(String::from),
        }
    }

    #[test]
    fn a_float_one_ulp_off_is_the_known_libm_difference_and_nothing_else_is() {
        let native = seen("[2.718281828459045, 1]\n", None);
        let ulp_off = seen("[2.7182818284590455, 1]\n", None);
        assert_eq!(
            compare(&native, &native, &ulp_off),
            Verdict::Known("libm_ulp")
        );
        let other = seen("[2.7182818284590455, 2]\n", None);
        assert_eq!(
            compare(&native, &native, &other),
            Verdict::Diverges(vec!["rustpython"])
        );
        let far = seen("[2.7182, 1]\n", None);
        assert_eq!(
            compare(&native, &native, &far),
            Verdict::Diverges(vec!["rustpython"])
        );
    }

    #[test]
    fn a_different_exception_type_is_a_divergence_even_with_equal_stdout() {
        let native = seen("a\n", Some("KeyError"));
        assert_eq!(compare(&native, &native, &native), Verdict::Agree);
        let other = seen("a\n", Some("IndexError"));
        assert_eq!(
            compare(&native, &native, &other),
            Verdict::Diverges(vec!["rustpython"])
        );
        assert_eq!(
            compare(&native, &other, &other),
            Verdict::Diverges(vec!["cpython", "rustpython"])
        );
    }
}
