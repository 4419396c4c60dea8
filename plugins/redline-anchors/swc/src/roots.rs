//! Which elements are a component's returned root, found before anything is stamped
//! (SWC's visitors see no parents, where Babel's walk up from the element): for each
//! function that is a component, the elements its `return`s (or its arrow's body) give,
//! through conditionals, `&&`/`||`/`??`, parentheses and type assertions.
//!
//! A function is a component when it is named with a capital: its own name, the class
//! whose `render` it is, or the variable it is bound to, also through calls wrapping it
//! (`memo(forwardRef(…))`) and `as`. A fragment, or a component returned, is no element.

use std::collections::HashMap;

use swc_core::common::BytePos;
use swc_core::ecma::ast::{
    ArrowExpr, ArrowFunctionBody, BinaryOp, Class, ClassDecl, ClassExpr, ClassMember, Expr, FnDecl, FnExpr,
    Function, GetterProp, Pat, PropName, ReturnStmt, SetterProp, VarDeclarator,
};
use swc_core::ecma::visit::{Visit, VisitWith};

use crate::rules::is_component_name;

/// The component whose root each element is, by where the element starts.
pub type Roots = HashMap<BytePos, String>;

/// Every component root of `program`.
pub fn find<N: VisitWith<RootFinder>>(program: &N) -> Roots {
    let mut finder = RootFinder { roots: Roots::new() };
    program.visit_with(&mut finder);
    finder.roots
}

pub struct RootFinder {
    roots: Roots,
}

impl RootFinder {
    fn add(&mut self, component: &str, elements: Vec<BytePos>) {
        for element in elements {
            self.roots.insert(element, component.to_owned());
        }
    }

    fn add_function(&mut self, component: &str, function: &Function) {
        if let Some(body) = &function.body {
            self.add(component, returned_by(body));
        }
    }

    fn add_arrow(&mut self, component: &str, arrow: &ArrowExpr) {
        let elements = match &*arrow.body {
            ArrowFunctionBody::Expr(body) => root_elements(body),
            ArrowFunctionBody::FunctionBody(body) => returned_by(body),
        };
        self.add(component, elements);
    }

    fn add_class(&mut self, component: &str, class: &Class) {
        for member in &class.body {
            if let ClassMember::Method(method) = member
                && matches!(&method.key, PropName::Ident(key) if key.sym == *"render")
            {
                self.add_function(component, &method.function);
            }
        }
    }
}

impl Visit for RootFinder {
    fn visit_fn_decl(&mut self, decl: &FnDecl) {
        if is_component_name(&decl.ident.sym) {
            self.add_function(&decl.ident.sym, &decl.function);
        }
        decl.visit_children_with(self);
    }

    fn visit_fn_expr(&mut self, expr: &FnExpr) {
        if let Some(ident) = &expr.ident
            && is_component_name(&ident.sym)
        {
            self.add_function(&ident.sym, &expr.function);
        }
        expr.visit_children_with(self);
    }

    fn visit_class_decl(&mut self, decl: &ClassDecl) {
        if is_component_name(&decl.ident.sym) {
            self.add_class(&decl.ident.sym, &decl.class);
        }
        decl.visit_children_with(self);
    }

    fn visit_class_expr(&mut self, expr: &ClassExpr) {
        if let Some(ident) = &expr.ident
            && is_component_name(&ident.sym)
        {
            self.add_class(&ident.sym, &expr.class);
        }
        expr.visit_children_with(self);
    }

    fn visit_var_declarator(&mut self, declarator: &VarDeclarator) {
        if let (Pat::Ident(binding), Some(init)) = (&declarator.name, &declarator.init)
            && is_component_name(&binding.id.sym)
        {
            self.add_bound(&binding.id.sym.clone(), init);
        }
        declarator.visit_children_with(self);
    }
}

impl RootFinder {
    /// The functions a variable is bound to, also wrapped in calls and `as`; a named
    /// function expression is its own component, found by `visit_fn_expr`.
    fn add_bound(&mut self, component: &str, init: &Expr) {
        match init {
            Expr::Arrow(arrow) => self.add_arrow(component, arrow),
            Expr::Fn(FnExpr { ident: None, function }) => self.add_function(component, function),
            Expr::Call(call) => {
                if let Some(callee) = call.callee.as_expr() {
                    self.add_bound(component, callee);
                }
                for argument in &call.args {
                    self.add_bound(component, &argument.expr);
                }
            }
            Expr::TsAs(e) => self.add_bound(component, &e.expr),
            // Babel keeps no parentheses in its tree; SWC does.
            Expr::Paren(e) => self.add_bound(component, &e.expr),
            _ => {}
        }
    }
}

/// Where each JSX element a returned expression is (not one inside it) starts.
fn root_elements(expr: &Expr) -> Vec<BytePos> {
    match expr {
        Expr::JSXElement(element) => vec![element.span.lo],
        Expr::Cond(cond) => [root_elements(&cond.cons), root_elements(&cond.alt)].concat(),
        Expr::Bin(bin)
            if matches!(bin.op, BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::NullishCoalescing) =>
        {
            [root_elements(&bin.left), root_elements(&bin.right)].concat()
        }
        Expr::Paren(e) => root_elements(&e.expr),
        Expr::TsAs(e) => root_elements(&e.expr),
        Expr::TsSatisfies(e) => root_elements(&e.expr),
        Expr::TsConstAssertion(e) => root_elements(&e.expr),
        _ => Vec::new(),
    }
}

/// The root elements a body's own `return`s give (not those of functions inside it).
fn returned_by<B: VisitWith<ReturnCollector>>(body: &B) -> Vec<BytePos> {
    let mut returns = ReturnCollector { elements: Vec::new() };
    body.visit_with(&mut returns);
    returns.elements
}

struct ReturnCollector {
    elements: Vec<BytePos>,
}

impl Visit for ReturnCollector {
    fn visit_return_stmt(&mut self, stmt: &ReturnStmt) {
        if let Some(returned) = &stmt.arg {
            self.elements.extend(root_elements(returned));
        }
    }
    fn visit_function(&mut self, _: &Function) {}
    fn visit_arrow_expr(&mut self, _: &ArrowExpr) {}
    fn visit_class(&mut self, _: &Class) {}
    fn visit_getter_prop(&mut self, _: &GetterProp) {}
    fn visit_setter_prop(&mut self, _: &SetterProp) {}
}
