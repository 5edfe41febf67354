//! The seed's `validate_dynamic_source`, step by step and in the seed's order.

use std::collections::BTreeSet;

use rustpython_parser::ast::{self, Ranged, Stmt};

use crate::rules::{self, ALLOWED_IMPORTS, MAX_SOURCE_CHARS, RuleId};
use crate::text::{self, LineIndex};
use crate::violation::Violation;
use crate::walker::{Node, Walk};
use crate::{Options, Strictness, Validated, parse};

/// Runs every check; the first failure is the one the seed would raise.
pub(crate) fn validate(source: &str, options: &Options) -> Result<Validated, Violation> {
    // Seed: `if not source.strip()` before `len(source) > _MAX_SOURCE_CHARS`.
    if text::is_blank(source) {
        return Err(Violation::new(
            RuleId::EmptySource,
            (1, 1),
            "the implementation is empty; write a module that defines `def execute(args):`".into(),
        ));
    }
    let chars = source.chars().count();
    if chars > MAX_SOURCE_CHARS {
        return Err(Violation::new(
            RuleId::TooLong,
            (1, 1),
            format!(
                "the implementation has {chars} characters, more than the limit of \
                 {MAX_SOURCE_CHARS}; make it shorter"
            ),
        ));
    }
    let index = LineIndex::new(source);
    let module = parse::parse_module(source, &index)?;
    let body = &module.body;
    let checker = Checker { index: &index };
    let result = checker.run(body);
    if result.is_ok() && options.strictness == Strictness::Strict {
        checker.strict(body)?;
    }
    result
}

struct Checker<'a> {
    index: &'a LineIndex<'a>,
}

impl Checker<'_> {
    fn at(&self, node: &impl Ranged) -> (usize, usize) {
        self.index.position(node.start().to_usize())
    }

    fn run(&self, body: &[Stmt]) -> Result<Validated, Violation> {
        self.check_execute(body)?;
        let mut imports = BTreeSet::new();
        // (position, root) of each import whose root is refused, reported after the walk.
        let mut denied: Vec<((usize, usize), String)> = Vec::new();
        for (node, _) in Walk::new(body) {
            match node {
                Node::Stmt(Stmt::Import(stmt)) => {
                    for alias in &stmt.names {
                        let name = text::identifier(alias.name.as_str());
                        let root = root_of(&name);
                        if !rules::import_allowed(root) {
                            denied.push((self.at(stmt), root.to_owned()));
                        }
                        imports.insert(root.to_owned());
                    }
                }
                Node::Stmt(Stmt::ImportFrom(stmt)) => {
                    let level = stmt.level.map_or(0, |level| level.to_u32());
                    let module = stmt.module.as_ref().map(|m| text::identifier(m.as_str()));
                    if level > 0 {
                        let dots = ".".repeat(level as usize);
                        let shown = format!("{dots}{}", module.as_deref().unwrap_or(""));
                        return Err(Violation::new(
                            RuleId::RelativeImport,
                            self.at(stmt),
                            format!(
                                "relative import `from {shown} import ...` is not allowed; a \
                                 dynamic tool is a single module and may import only: {}",
                                ALLOWED_IMPORTS.join(", ")
                            ),
                        ));
                    }
                    let root = root_of(module.as_deref().unwrap_or("")).to_owned();
                    if !rules::import_allowed(&root) {
                        denied.push((self.at(stmt), root.clone()));
                    }
                    imports.insert(root);
                }
                Node::Expr(ast::Expr::Call(call)) => {
                    if let ast::Expr::Name(func) = call.func.as_ref() {
                        let name = text::identifier(func.id.as_str());
                        if rules::call_banned(&name) {
                            return Err(Violation::new(
                                RuleId::BannedCall,
                                self.at(call),
                                format!(
                                    "call to `{name}` is not allowed; dynamic tools may not use \
                                     reflection, dynamic code, files or input: compute the value \
                                     directly with ordinary expressions"
                                ),
                            ));
                        }
                    }
                }
                Node::Expr(ast::Expr::Attribute(attribute)) => {
                    let attr = text::identifier(attribute.attr.as_str());
                    if let Some(rule) = rules::attribute_rule(&attr) {
                        let why = if rule == RuleId::BannedAttribute {
                            "it gives access to interpreter internals or string-driven reflection"
                        } else {
                            "attributes starting with `_` are private; use the public API"
                        };
                        return Err(Violation::new(
                            rule,
                            self.at(attribute),
                            format!("attribute `.{attr}` is not allowed: {why}"),
                        ));
                    }
                }
                Node::Stmt(Stmt::Global(stmt)) => {
                    return Err(self.scope_statement(RuleId::GlobalStatement, "global", stmt));
                }
                Node::Stmt(Stmt::Nonlocal(stmt)) => {
                    return Err(self.scope_statement(RuleId::NonlocalStatement, "nonlocal", stmt));
                }
                _ => {}
            }
        }
        if !denied.is_empty() {
            // The seed names every refused root (sorted) after the walk; we point at the first
            // refused import in source order.
            let position = denied.iter().map(|(at, _)| *at).min().unwrap_or((1, 1));
            let roots: BTreeSet<&str> = denied.iter().map(|(_, root)| root.as_str()).collect();
            let roots: Vec<&str> = roots.into_iter().collect();
            return Err(Violation::new(
                RuleId::ImportNotAllowed,
                position,
                format!(
                    "import of `{}` is not allowed; dynamic tools may import only: {}",
                    roots.join("`, `"),
                    ALLOWED_IMPORTS.join(", ")
                ),
            ));
        }
        Ok(Validated {
            imports: imports.into_iter().collect(),
        })
    }

    fn scope_statement(&self, rule: RuleId, keyword: &str, stmt: &impl Ranged) -> Violation {
        Violation::new(
            rule,
            self.at(stmt),
            format!(
                "`{keyword}` statements are not allowed; keep state in local variables and pass \
                 it through arguments and return values"
            ),
        )
    }

    /// Seed: exactly one top-level (sync or async) `def execute`, it must be sync, and take one
    /// positional parameter (positional-only counts) without `*args`/`**kwargs`. Keyword-only
    /// parameters and defaults are not looked at by the seed, so they are accepted here too.
    fn check_execute(&self, body: &[Stmt]) -> Result<(), Violation> {
        let defs: Vec<&Stmt> = body
            .iter()
            .filter(|stmt| match stmt {
                Stmt::FunctionDef(f) => text::identifier(f.name.as_str()) == "execute",
                Stmt::AsyncFunctionDef(f) => text::identifier(f.name.as_str()) == "execute",
                _ => false,
            })
            .collect();
        let function = match defs.as_slice() {
            [] => {
                return Err(Violation::new(
                    RuleId::MissingExecute,
                    (1, 1),
                    "no top-level `def execute(args):` found; define exactly one synchronous \
                     `execute` function at module level (not inside a class or block)"
                        .into(),
                ));
            }
            [Stmt::AsyncFunctionDef(f)] => {
                return Err(Violation::new(
                    RuleId::AsyncExecute,
                    self.at(f),
                    "`execute` is declared `async def`; declare it as plain \
                     `def execute(args):`"
                        .into(),
                ));
            }
            [Stmt::FunctionDef(f)] => f,
            [_, second, ..] => {
                return Err(Violation::new(
                    RuleId::DuplicateExecute,
                    self.at(*second),
                    format!(
                        "`execute` is defined {} times at module level; keep exactly one \
                         synchronous `def execute(args):`",
                        defs.len()
                    ),
                ));
            }
            [_] => unreachable!("the filter keeps only function definitions"),
        };
        let args = &function.args;
        let positional = args.posonlyargs.len() + args.args.len();
        if positional != 1 || args.vararg.is_some() || args.kwarg.is_some() {
            let mut found = format!("{positional} positional parameter(s)");
            if args.vararg.is_some() {
                found.push_str(" and `*args`");
            }
            if args.kwarg.is_some() {
                found.push_str(" and `**kwargs`");
            }
            return Err(Violation::new(
                RuleId::ExecuteSignature,
                self.at(function),
                format!(
                    "`execute` must take exactly one positional parameter and no `*args` or \
                     `**kwargs`, like `def execute(args):`; found {found}"
                ),
            ));
        }
        Ok(())
    }

    /// Checks stricter than the seed, run only when the seed's checks pass.
    fn strict(&self, body: &[Stmt]) -> Result<(), Violation> {
        if let Some(Stmt::FunctionDef(function)) = body.iter().find(|stmt| {
            matches!(stmt, Stmt::FunctionDef(f) if text::identifier(f.name.as_str()) == "execute")
        }) && let Some(param) = function.args.kwonlyargs.iter().find(|a| a.default.is_none())
        {
            return Err(Violation::new(
                RuleId::ExecuteRequiredKeyword,
                self.at(&param.def),
                format!(
                    "keyword-only parameter `{}` of `execute` has no default, so the call \
                     `execute(args)` would fail; give it a default or remove it",
                    param.def.arg.as_str()
                ),
            ));
        }
        let mut first: Option<((usize, usize), String)> = None;
        for (node, _) in Walk::new(body) {
            if let Node::Expr(ast::Expr::Name(name)) = node {
                let id = text::identifier(name.id.as_str());
                let at = self.at(name);
                if rules::call_banned(&id) && first.as_ref().is_none_or(|(best, _)| at < *best) {
                    first = Some((at, id.into_owned()));
                }
            }
        }
        match first {
            Some((at, id)) => Err(Violation::new(
                RuleId::BannedName,
                at,
                format!(
                    "`{id}` may not be referenced at all in strict mode, not even without a \
                     call; compute the value directly instead"
                ),
            )),
            None => Ok(()),
        }
    }
}

/// `import a.b` and `from a.b import c` both have root `a` (the seed's `split(".", 1)[0]`).
fn root_of(name: &str) -> &str {
    name.split('.').next().unwrap_or("")
}
