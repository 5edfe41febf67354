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

/// A known, documented difference of a guest from native python3: matched by name, never
/// silently.
#[derive(Debug, Clone, Copy)]
pub struct KnownDifference {
    /// Its name, as the fuzzer reports it.
    pub name: &'static str,
    /// Where it is documented.
    pub documented: &'static str,
    /// True when a disagreement between native and a guest's output is this difference.
    pub matches: fn(native: &Observed, guest: &Observed) -> bool,
}

/// The differences the fuzzer expects and counts apart (README, "Known RustPython
/// differences"). `libm_ulp`: both guests compute `math` functions with their own libm
/// (wasi-libc's for CPython, Rust's `libm` for RustPython), which is sometimes one or two ulps
/// from the host's glibc (`atan`, `cosh` on both; `exp`, `log` on RustPython too).
pub const KNOWN_DIFFERENCES: [KnownDifference; 1] = [KnownDifference {
    name: "libm_ulp",
    documented: "README, Known RustPython differences; fixtures/differential/found/seed-1000093.py",
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
    /// A guest differs from native python3 and no known difference explains it; the names of
    /// the guests that differ.
    Diverges(Vec<&'static str>),
    /// Every guest that differs does so by a known difference, the first of which is named.
    Known(&'static str),
}

/// Compares the guests' runs with native python3's.
pub fn compare(native: &Observed, cpython: &Observed, rustpython: &Observed) -> Verdict {
    let mut unexplained = Vec::new();
    let mut known = None;
    for (name, guest) in [("cpython", cpython), ("rustpython", rustpython)] {
        if guest == native {
            continue;
        }
        match KNOWN_DIFFERENCES
            .iter()
            .find(|k| (k.matches)(native, guest))
        {
            Some(k) => known = known.or(Some(k.name)),
            None => unexplained.push(name),
        }
    }
    match (unexplained.is_empty(), known) {
        (false, _) => Verdict::Diverges(unexplained),
        (true, Some(name)) => Verdict::Known(name),
        (true, None) => Verdict::Agree,
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
        assert_eq!(
            compare(&native, &ulp_off, &native),
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
