//! Parse-time rules CPython enforces and rustpython-parser 0.4 does not.
//!
//! Found by differential testing against `ast.parse` (tests/all/differential.rs and mutated corpora).
//! rustpython accepts these; CPython's `ast.parse` raises `SyntaxError`, so the seed refuses them:
//! - invalid assignment, `for`, `with ... as`, comprehension and `del` targets
//!   (`f() = 1`, `a + b = 1`, `del *a`, `'a' = 1`, `... = 1`, `a if b else c = 1`);
//! - augmented and annotated assignment to anything but a name, attribute or subscript
//!   (`a, b += 1`, `(a, b): int`);
//! - `**` or a bare `*` with no name in a parameter list (`def f(a, **)`, `def f(*, **k)`);
//! - an unparenthesised generator expression that is not a call's only argument
//!   (`f(x for x in y, 1)`, `class C(x for x in y)`);
//! - Python 3.12 type parameters and `type` statements: the reference is CPython 3.11 (the
//!   python3 the differential test runs); a seed on 3.12+ would accept them.
//!
//! Known remaining differences: rustpython refuses a repeated keyword argument (`f(a=1, a=2)`)
//! and a repeated parameter (`def f(a, a)`) while CPython's `ast.parse` accepts both; CPython's
//! compiler refuses them later, so the seed's smoke run of such a tool fails anyway.

use rustpython_parser::ast::{Expr, Ranged, Stmt};
use rustpython_parser::lexer::lex;
use rustpython_parser::{Mode, Tok};

use crate::walker::{Node, Walk};

/// The byte offset and description of the first construct CPython would refuse, if any.
pub(crate) fn first_error(source: &str, body: &[Stmt]) -> Option<(usize, &'static str)> {
    tokens(source).or_else(|| tree(source, body))
}

fn tokens(source: &str) -> Option<(usize, &'static str)> {
    let toks: Vec<(Tok, usize)> = lex(source, Mode::Module)
        .flatten()
        .map(|(tok, range)| (tok, range.start().to_usize()))
        .collect();
    for (i, (tok, at)) in toks.iter().enumerate() {
        let next = toks.get(i + 1).map(|(t, _)| t);
        let after = toks.get(i + 2).map(|(t, _)| t);
        let bad = match tok {
            Tok::DoubleStar => matches!(next, Some(Tok::Rpar | Tok::Comma | Tok::Colon)),
            Tok::Star => {
                matches!(next, Some(Tok::Rpar | Tok::Colon))
                    || (matches!(next, Some(Tok::Comma))
                        && matches!(after, Some(Tok::Rpar | Tok::DoubleStar | Tok::Colon)))
            }
            _ => false,
        };
        if bad {
            return Some((*at, "named parameters must follow a bare `*` or `**`"));
        }
    }
    None
}

fn store_ok(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => true,
        Expr::Starred(e) => store_ok(&e.value),
        Expr::List(e) => e.elts.iter().all(store_ok),
        Expr::Tuple(e) => e.elts.iter().all(store_ok),
        _ => false,
    }
}

fn delete_ok(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => true,
        Expr::List(e) => e.elts.iter().all(delete_ok),
        Expr::Tuple(e) => e.elts.iter().all(delete_ok),
        _ => false,
    }
}

fn single_ok(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)
    )
}

const TARGET: &str = "cannot assign to this expression";

fn tree(source: &str, body: &[Stmt]) -> Option<(usize, &'static str)> {
    let mut first: Option<(usize, &'static str)> = None;
    let note = |first: &mut Option<(usize, &'static str)>, expr: &Expr, ok: bool, why| {
        if !ok {
            note_at(first, expr.start().to_usize(), why);
        }
    };
    for (node, _) in Walk::new(body) {
        match node {
            Node::Stmt(Stmt::Assign(s)) => s
                .targets
                .iter()
                .for_each(|t| note(&mut first, t, store_ok(t), TARGET)),
            Node::Stmt(Stmt::For(s)) => note(&mut first, &s.target, store_ok(&s.target), TARGET),
            Node::Stmt(Stmt::AsyncFor(s)) => {
                note(&mut first, &s.target, store_ok(&s.target), TARGET)
            }
            Node::Stmt(Stmt::AugAssign(s)) => note(
                &mut first,
                &s.target,
                single_ok(&s.target),
                "illegal expression for augmented assignment",
            ),
            Node::Stmt(Stmt::AnnAssign(s)) => note(
                &mut first,
                &s.target,
                single_ok(&s.target),
                "only a single target can be annotated",
            ),
            Node::Stmt(Stmt::Delete(s)) => s
                .targets
                .iter()
                .for_each(|t| note(&mut first, t, delete_ok(t), "cannot delete this expression")),
            Node::WithItem(item) => {
                if let Some(vars) = &item.optional_vars {
                    note(&mut first, vars, store_ok(vars), TARGET);
                }
            }
            Node::Comprehension(c) => note(&mut first, &c.target, store_ok(&c.target), TARGET),
            Node::Expr(Expr::Call(call)) if call.args.len() + call.keywords.len() > 1 => {
                for arg in &call.args {
                    if let Expr::GeneratorExp(g) = arg {
                        let parenthesised =
                            source.as_bytes().get(g.start().to_usize()) == Some(&b'(');
                        note(
                            &mut first,
                            arg,
                            parenthesised,
                            "generator expression must be parenthesized",
                        );
                    }
                }
            }
            Node::Stmt(Stmt::ClassDef(class)) => {
                for base in &class.bases {
                    if let Expr::GeneratorExp(g) = base {
                        let parenthesised =
                            source.as_bytes().get(g.start().to_usize()) == Some(&b'(');
                        note(
                            &mut first,
                            base,
                            parenthesised,
                            "generator expression must be parenthesized",
                        );
                    }
                }
                if let Some(param) = class.type_params.first() {
                    note_at(&mut first, param.start().to_usize(), PEP695);
                }
            }
            Node::Stmt(Stmt::FunctionDef(f)) if !f.type_params.is_empty() => {
                note_at(&mut first, f.type_params[0].start().to_usize(), PEP695)
            }
            Node::Stmt(Stmt::AsyncFunctionDef(f)) if !f.type_params.is_empty() => {
                note_at(&mut first, f.type_params[0].start().to_usize(), PEP695)
            }
            Node::Stmt(stmt @ Stmt::TypeAlias(_)) => {
                note_at(&mut first, stmt.start().to_usize(), PEP695)
            }
            _ => {}
        }
    }
    first
}

/// Python 3.12 syntax; the reference `ast.parse` (CPython 3.11) refuses it.
const PEP695: &str = "type parameters and `type` statements need Python 3.12";

fn note_at(first: &mut Option<(usize, &'static str)>, at: usize, why: &'static str) {
    if first.is_none_or(|(best, _)| at < best) {
        *first = Some((at, why));
    }
}
