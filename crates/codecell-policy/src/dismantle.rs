//! Dropping a syntax tree without recursion.
//!
//! The derived `Drop` of rustpython's tree recurses once per nesting level. A 100,000-character
//! source can nest 50,000 levels deep (`-----x`, `a.a.a.a`, `1+1+1`), which overflows a 2 MiB
//! thread stack while the tree is freed, even though such a source is refused. Here every node's
//! children are moved onto explicit work lists before the (now shallow) node itself is dropped.

use rustpython_parser::ast::{Arguments, ExceptHandler, Expr, Pattern, Stmt, TypeParam};

#[derive(Default)]
struct Work {
    stmts: Vec<Stmt>,
    exprs: Vec<Expr>,
    patterns: Vec<Pattern>,
}

impl Work {
    fn opt(&mut self, expr: Option<Box<Expr>>) {
        self.exprs.extend(expr.map(|e| *e));
    }

    fn arguments(&mut self, args: Arguments) {
        for a in args
            .posonlyargs
            .into_iter()
            .chain(args.args)
            .chain(args.kwonlyargs)
        {
            self.opt(a.def.annotation);
            self.opt(a.default);
        }
        for a in args.vararg.into_iter().chain(args.kwarg) {
            self.opt(a.annotation);
        }
    }

    fn type_params(&mut self, params: Vec<TypeParam>) {
        for param in params {
            if let TypeParam::TypeVar(var) = param {
                self.opt(var.bound);
            }
        }
    }
}

/// Frees `body` using heap work lists instead of the call stack.
pub(crate) fn dismantle(body: Vec<Stmt>) {
    let mut work = Work {
        stmts: body,
        ..Work::default()
    };
    loop {
        if let Some(stmt) = work.stmts.pop() {
            stmt_parts(stmt, &mut work);
        } else if let Some(expr) = work.exprs.pop() {
            expr_parts(expr, &mut work);
        } else if let Some(pattern) = work.patterns.pop() {
            pattern_parts(pattern, &mut work);
        } else {
            break;
        }
    }
}

fn stmt_parts(stmt: Stmt, w: &mut Work) {
    match stmt {
        Stmt::FunctionDef(f) => {
            w.arguments(*f.args);
            w.stmts.extend(f.body);
            w.exprs.extend(f.decorator_list);
            w.opt(f.returns);
            w.type_params(f.type_params);
        }
        Stmt::AsyncFunctionDef(f) => {
            w.arguments(*f.args);
            w.stmts.extend(f.body);
            w.exprs.extend(f.decorator_list);
            w.opt(f.returns);
            w.type_params(f.type_params);
        }
        Stmt::ClassDef(c) => {
            w.exprs.extend(c.bases);
            w.exprs.extend(c.keywords.into_iter().map(|k| k.value));
            w.stmts.extend(c.body);
            w.exprs.extend(c.decorator_list);
            w.type_params(c.type_params);
        }
        Stmt::Return(s) => w.opt(s.value),
        Stmt::Delete(s) => w.exprs.extend(s.targets),
        Stmt::Assign(s) => {
            w.exprs.extend(s.targets);
            w.exprs.push(*s.value);
        }
        Stmt::TypeAlias(s) => {
            w.exprs.push(*s.name);
            w.type_params(s.type_params);
            w.exprs.push(*s.value);
        }
        Stmt::AugAssign(s) => {
            w.exprs.push(*s.target);
            w.exprs.push(*s.value);
        }
        Stmt::AnnAssign(s) => {
            w.exprs.push(*s.target);
            w.exprs.push(*s.annotation);
            w.opt(s.value);
        }
        Stmt::For(s) => {
            w.exprs.push(*s.target);
            w.exprs.push(*s.iter);
            w.stmts.extend(s.body.into_iter().chain(s.orelse));
        }
        Stmt::AsyncFor(s) => {
            w.exprs.push(*s.target);
            w.exprs.push(*s.iter);
            w.stmts.extend(s.body.into_iter().chain(s.orelse));
        }
        Stmt::While(s) => {
            w.exprs.push(*s.test);
            w.stmts.extend(s.body.into_iter().chain(s.orelse));
        }
        Stmt::If(s) => {
            w.exprs.push(*s.test);
            w.stmts.extend(s.body.into_iter().chain(s.orelse));
        }
        Stmt::With(s) => {
            for item in s.items {
                w.exprs.push(item.context_expr);
                w.opt(item.optional_vars);
            }
            w.stmts.extend(s.body);
        }
        Stmt::AsyncWith(s) => {
            for item in s.items {
                w.exprs.push(item.context_expr);
                w.opt(item.optional_vars);
            }
            w.stmts.extend(s.body);
        }
        Stmt::Match(s) => {
            w.exprs.push(*s.subject);
            for case in s.cases {
                w.patterns.push(case.pattern);
                w.opt(case.guard);
                w.stmts.extend(case.body);
            }
        }
        Stmt::Raise(s) => {
            w.opt(s.exc);
            w.opt(s.cause);
        }
        Stmt::Try(s) => try_parts(s.body, s.handlers, s.orelse, s.finalbody, w),
        Stmt::TryStar(s) => try_parts(s.body, s.handlers, s.orelse, s.finalbody, w),
        Stmt::Assert(s) => {
            w.exprs.push(*s.test);
            w.opt(s.msg);
        }
        Stmt::Expr(s) => w.exprs.push(*s.value),
        Stmt::Import(_)
        | Stmt::ImportFrom(_)
        | Stmt::Global(_)
        | Stmt::Nonlocal(_)
        | Stmt::Pass(_)
        | Stmt::Break(_)
        | Stmt::Continue(_) => {}
    }
}

fn try_parts(
    body: Vec<Stmt>,
    handlers: Vec<ExceptHandler>,
    orelse: Vec<Stmt>,
    finalbody: Vec<Stmt>,
    w: &mut Work,
) {
    w.stmts
        .extend(body.into_iter().chain(orelse).chain(finalbody));
    for ExceptHandler::ExceptHandler(handler) in handlers {
        w.opt(handler.type_);
        w.stmts.extend(handler.body);
    }
}

fn expr_parts(expr: Expr, w: &mut Work) {
    match expr {
        Expr::BoolOp(e) => w.exprs.extend(e.values),
        Expr::NamedExpr(e) => {
            w.exprs.push(*e.target);
            w.exprs.push(*e.value);
        }
        Expr::BinOp(e) => {
            w.exprs.push(*e.left);
            w.exprs.push(*e.right);
        }
        Expr::UnaryOp(e) => w.exprs.push(*e.operand),
        Expr::Lambda(e) => {
            w.arguments(*e.args);
            w.exprs.push(*e.body);
        }
        Expr::IfExp(e) => {
            w.exprs.push(*e.test);
            w.exprs.push(*e.body);
            w.exprs.push(*e.orelse);
        }
        Expr::Dict(e) => {
            w.exprs.extend(e.keys.into_iter().flatten());
            w.exprs.extend(e.values);
        }
        Expr::Set(e) => w.exprs.extend(e.elts),
        Expr::ListComp(e) => {
            w.exprs.push(*e.elt);
            comprehensions(e.generators, w);
        }
        Expr::SetComp(e) => {
            w.exprs.push(*e.elt);
            comprehensions(e.generators, w);
        }
        Expr::DictComp(e) => {
            w.exprs.push(*e.key);
            w.exprs.push(*e.value);
            comprehensions(e.generators, w);
        }
        Expr::GeneratorExp(e) => {
            w.exprs.push(*e.elt);
            comprehensions(e.generators, w);
        }
        Expr::Await(e) => w.exprs.push(*e.value),
        Expr::Yield(e) => w.opt(e.value),
        Expr::YieldFrom(e) => w.exprs.push(*e.value),
        Expr::Compare(e) => {
            w.exprs.push(*e.left);
            w.exprs.extend(e.comparators);
        }
        Expr::Call(e) => {
            w.exprs.push(*e.func);
            w.exprs.extend(e.args);
            w.exprs.extend(e.keywords.into_iter().map(|k| k.value));
        }
        Expr::FormattedValue(e) => {
            w.exprs.push(*e.value);
            w.opt(e.format_spec);
        }
        Expr::JoinedStr(e) => w.exprs.extend(e.values),
        Expr::Attribute(e) => w.exprs.push(*e.value),
        Expr::Subscript(e) => {
            w.exprs.push(*e.value);
            w.exprs.push(*e.slice);
        }
        Expr::Starred(e) => w.exprs.push(*e.value),
        Expr::List(e) => w.exprs.extend(e.elts),
        Expr::Tuple(e) => w.exprs.extend(e.elts),
        Expr::Slice(e) => {
            w.opt(e.lower);
            w.opt(e.upper);
            w.opt(e.step);
        }
        Expr::Constant(_) | Expr::Name(_) => {}
    }
}

fn comprehensions(generators: Vec<rustpython_parser::ast::Comprehension>, w: &mut Work) {
    for c in generators {
        w.exprs.push(c.target);
        w.exprs.push(c.iter);
        w.exprs.extend(c.ifs);
    }
}

fn pattern_parts(pattern: Pattern, w: &mut Work) {
    match pattern {
        Pattern::MatchValue(p) => w.exprs.push(*p.value),
        Pattern::MatchSequence(p) => w.patterns.extend(p.patterns),
        Pattern::MatchMapping(p) => {
            w.exprs.extend(p.keys);
            w.patterns.extend(p.patterns);
        }
        Pattern::MatchClass(p) => {
            w.exprs.push(*p.cls);
            w.patterns
                .extend(p.patterns.into_iter().chain(p.kwd_patterns));
        }
        Pattern::MatchAs(p) => w.patterns.extend(p.pattern.map(|p| *p)),
        Pattern::MatchOr(p) => w.patterns.extend(p.patterns),
        Pattern::MatchSingleton(_) | Pattern::MatchStar(_) => {}
    }
}
