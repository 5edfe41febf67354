//! No input makes the validator panic or overflow the stack: random text, mutations of the
//! corpus, and deep nesting, run on a thread with a small (512 KiB) stack.

use codecell_policy::{Options, Strictness, validate_dynamic_source, validate_with};
use proptest::prelude::*;

/// Runs `f` on a thread with a deliberately small stack, so recursion problems surface.
fn on_small_stack<F: FnOnce() + Send + 'static>(f: F) {
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("validator panicked or overflowed");
}

fn check_both(source: &str) {
    let seed = validate_dynamic_source(source);
    let strict = validate_with(
        source,
        &Options {
            strictness: Strictness::Strict,
        },
    );
    // Strict mode only ever adds violations: whatever the seed refuses, strict refuses the same way.
    if let Err(v) = &seed {
        assert_eq!(strict.as_ref().err(), Some(v));
    }
    if let Err(v) = seed {
        assert!(v.line >= 1 && v.column >= 1, "{v}");
        assert!(!v.message.is_empty());
    }
}

#[test]
fn deep_nesting_does_not_overflow() {
    on_small_stack(|| {
        for shape in ["-", "not ", "~", "await ", "lambda: "] {
            let src = format!(
                "def execute(args):\n    return {}1\n",
                shape.repeat(90_000 / shape.len())
            );
            assert!(validate_dynamic_source(&src).is_err());
        }
        for (open, close) in [
            ("a", ".b"),
            ("a", "[0]"),
            ("f", "()"),
            ("1", "+1"),
            ("1", " if 1 else 1"),
        ] {
            let src = format!(
                "def execute(args):\n    return {open}{}\n",
                close.repeat(90_000 / close.len())
            );
            assert!(validate_dynamic_source(&src).is_err(), "{open}{close}");
        }
    });
}

#[test]
fn corpus_mutations_do_not_panic() {
    on_small_stack(|| {
        let cases = crate::common::corpus();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let pieces = [
            "(", ")", "[", "f'{", "}'", "\n", "\t", "\r\n", ":", "lambda", "é", "\u{feff}",
            "\"\"\"", "\\", "@", "*", "**", ".", "_", "match", "case", "async", "await", "yield",
            "global", "\0",
        ];
        for case in cases.iter().filter(|c| c.source.len() < 5_000) {
            for _ in 0..40 {
                let mut chars: Vec<char> = case.source.chars().collect();
                let at = (next() as usize) % (chars.len() + 1);
                match next() % 3 {
                    0 if !chars.is_empty() => {
                        let end = (at + (next() as usize) % 8).min(chars.len());
                        chars.drain(at.min(end)..end);
                    }
                    1 => {
                        let piece = pieces[(next() as usize) % pieces.len()];
                        chars.splice(at..at, piece.chars());
                    }
                    _ => chars.truncate(at),
                }
                let mutated: String = chars.into_iter().collect();
                check_both(&mutated);
            }
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_does_not_panic(source in "\\PC{0,200}") {
        check_both(&source);
    }

    #[test]
    fn python_like_text_does_not_panic(
        source in "(def execute\\(args\\):\n|    |return |import |from |\\.|_|\\(|\\)|\\[|\\]|f'|\\{|\\}|'|eval|x|:|\n|,|lambda |@|\\*|=|async |class |global |nonlocal |match |case |\t|\r){0,60}"
    ) {
        check_both(&source);
    }
}
