//! The stamping pass: on each lower-case (intrinsic) JSX element, the anchor and test id
//! its rules give, prepended so that a written attribute or a later spread wins; the
//! commit in a JSX `<head>`.

use swc_core::atoms::Atom;
use swc_core::common::{DUMMY_SP, SourceMapper, Span};
use swc_core::ecma::ast::{
    BinExpr, BinaryOp, Expr, Ident, IdentName, JSXAttr, JSXAttrName, JSXAttrOrSpread, JSXAttrValue,
    JSXClosingElement, JSXElement, JSXElementChild, JSXElementName, JSXExpr, JSXExprContainer,
    JSXOpeningElement, Lit, Str,
};
use swc_core::ecma::visit::{VisitMut, VisitMutWith};

use crate::jsx::{attribute, attribute_string, element_name, has_handler, translation_key};
use crate::roots::Roots;
use crate::rules::{Written, is_interactive, stamps};

pub struct Stamper<'a> {
    pub roots: Roots,
    pub source_map: &'a dyn SourceMapper,
    /// The commit to write into a `<head>`, when the meta tag is wanted.
    pub sha: Option<String>,
    /// The module's `_fabricSrc` constant, once an anchor uses it.
    pub path_ident: Option<Ident>,
}

impl VisitMut for Stamper<'_> {
    fn visit_mut_jsx_element(&mut self, element: &mut JSXElement) {
        if let Some(tag) = intrinsic_tag(&element.opening.name) {
            self.stamp(element, &tag);
            if tag == "head" {
                self.write_sha(element);
            }
        }
        element.visit_mut_children_with(self);
    }
}

/// The tag of an intrinsic element (`div`, `my-widget`); none for a component.
fn intrinsic_tag(name: &JSXElementName) -> Option<String> {
    match name {
        JSXElementName::Ident(ident) if ident.sym.starts_with(|c: char| c.is_ascii_lowercase()) => {
            Some(ident.sym.to_string())
        }
        _ => None,
    }
}

impl Stamper<'_> {
    fn stamp(&mut self, element: &mut JSXElement, tag: &str) {
        let opening = &element.opening;
        let component = self.roots.get(&element.span.lo).map(String::as_str);
        let role = attribute_string(opening, "role");
        let written = Written {
            anchor: attribute(opening, "data-fabric-src").is_some(),
            test_id: attribute(opening, "data-testid").is_some(),
        };
        let interactive = is_interactive(tag, role.as_deref(), has_handler(opening));
        let stamp = stamps(interactive, component, written, translation_key(element));
        let mut added = Vec::new();
        if stamp.anchor && !opening.span.is_dummy() {
            added.push(self.anchor(opening.span));
        }
        if let Some(test_id) = stamp.test_id {
            added.push(string_attribute("data-testid", &test_id));
        }
        element.opening.attrs.splice(0..0, added);
    }

    /// `data-fabric-src={_fabricSrc + ":LINE"}`: each module holds its path once.
    fn anchor(&mut self, span: Span) -> JSXAttrOrSpread {
        let line = self.source_map.lookup_char_pos(span.lo).line;
        let path =
            self.path_ident.get_or_insert_with(|| Ident::new_private("_fabricSrc".into(), DUMMY_SP)).clone();
        let value = Expr::Bin(BinExpr {
            span: DUMMY_SP,
            op: BinaryOp::Add,
            left: Box::new(Expr::Ident(path)),
            right: Box::new(Expr::Lit(Lit::Str(Str::from(Atom::from(format!(":{line}")))))),
        });
        let container = JSXExprContainer { span: DUMMY_SP, expr: JSXExpr::Expr(Box::new(value)) };
        attribute_with("data-fabric-src", JSXAttrValue::JSXExprContainer(container))
    }

    /// `<meta name="fabric-git-sha" content="…" />` first in a `<head>`, unless one is written.
    fn write_sha(&self, head: &mut JSXElement) {
        let Some(sha) = &self.sha else { return };
        if head.children.iter().any(is_sha_meta) {
            return;
        }
        if head.opening.self_closing {
            head.opening.self_closing = false;
            head.closing = Some(JSXClosingElement { span: DUMMY_SP, name: head.opening.name.clone() });
        }
        let meta = JSXElement {
            span: DUMMY_SP,
            opening: JSXOpeningElement {
                name: JSXElementName::Ident(Ident::new_no_ctxt("meta".into(), DUMMY_SP)),
                span: DUMMY_SP,
                attrs: vec![string_attribute("name", "fabric-git-sha"), string_attribute("content", sha)],
                self_closing: true,
                type_args: None,
            },
            children: Vec::new(),
            closing: None,
        };
        head.children.insert(0, JSXElementChild::JSXElement(Box::new(meta)));
    }
}

fn attribute_with(name: &str, value: JSXAttrValue) -> JSXAttrOrSpread {
    JSXAttrOrSpread::JSXAttr(JSXAttr {
        span: DUMMY_SP,
        name: JSXAttrName::Ident(IdentName::new(name.into(), DUMMY_SP)),
        value: Some(value),
    })
}

fn string_attribute(name: &str, value: &str) -> JSXAttrOrSpread {
    attribute_with(name, JSXAttrValue::Str(Str::from(Atom::from(value))))
}

fn is_sha_meta(child: &JSXElementChild) -> bool {
    match child {
        JSXElementChild::JSXElement(element) => {
            element_name(&element.opening.name).as_deref() == Some("meta")
                && attribute_string(&element.opening, "name").as_deref() == Some("fabric-git-sha")
        }
        _ => false,
    }
}
