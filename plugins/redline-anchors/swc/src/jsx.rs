//! What a JSX element says, read as `../src/babel.cjs` and `../src/rules.cjs` read it:
//! its attributes, the strings known at build time, and the i18n keys of its text.

use swc_core::ecma::ast::{
    CallExpr, Callee, Expr, ExprOrSpread, JSXAttr, JSXAttrName, JSXAttrOrSpread, JSXAttrValue, JSXElement,
    JSXElementChild, JSXElementName, JSXExpr, JSXMemberExpr, JSXObject, JSXOpeningElement, Lit, MemberProp,
    Prop, PropName, PropOrSpread,
};

use crate::rules::{self, LABEL_ATTRIBUTES};

/// An attribute's name, `ns:name` for a namespaced one.
pub fn attribute_name(attribute: &JSXAttr) -> String {
    match &attribute.name {
        JSXAttrName::Ident(name) => name.sym.to_string(),
        JSXAttrName::JSXNamespacedName(name) => format!("{}:{}", name.ns.sym, name.name.sym),
    }
}

fn attributes(opening: &JSXOpeningElement) -> impl Iterator<Item = &JSXAttr> {
    opening.attrs.iter().filter_map(|a| match a {
        JSXAttrOrSpread::JSXAttr(attribute) => Some(attribute),
        JSXAttrOrSpread::SpreadElement(_) => None,
    })
}

/// The first attribute called `name`.
pub fn attribute<'a>(opening: &'a JSXOpeningElement, name: &str) -> Option<&'a JSXAttr> {
    attributes(opening).find(|a| attribute_name(a) == name)
}

/// Whether any attribute is an event handler (`on` and a capital).
pub fn has_handler(opening: &JSXOpeningElement) -> bool {
    attributes(opening).any(|a| {
        let name = attribute_name(a);
        name.strip_prefix("on").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
    })
}

/// `Trans`, `Foo.Bar` (member names joined with dots); none for a namespaced name.
pub fn element_name(name: &JSXElementName) -> Option<String> {
    match name {
        JSXElementName::Ident(ident) => Some(ident.sym.to_string()),
        JSXElementName::JSXMemberExpr(member) => Some(member_name(member)),
        JSXElementName::JSXNamespacedName(_) => None,
    }
}

fn member_name(member: &JSXMemberExpr) -> String {
    let object = match &member.obj {
        JSXObject::Ident(ident) => ident.sym.to_string(),
        JSXObject::JSXMemberExpr(inner) => member_name(inner),
    };
    format!("{object}.{}", member.prop.sym)
}

/// A string known at build time: `"x"`, `'x'` or a template without expressions.
pub fn static_string(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(Lit::Str(s)) => s.value.as_str().map(str::to_owned),
        Expr::Tpl(tpl) if tpl.exprs.is_empty() => {
            tpl.quasis.first()?.cooked.as_ref()?.as_str().map(str::to_owned)
        }
        _ => None,
    }
}

/// The static string an attribute's value is (`"x"` or `{"x"}`).
pub fn attribute_string(opening: &JSXOpeningElement, name: &str) -> Option<String> {
    match attribute(opening, name)?.value.as_ref()? {
        JSXAttrValue::Str(s) => s.value.as_str().map(str::to_owned),
        JSXAttrValue::JSXExprContainer(container) => match &container.expr {
            JSXExpr::Expr(expr) => static_string(expr),
            JSXExpr::JSXEmptyExpr(_) => None,
        },
        _ => None,
    }
}

fn unwrap(mut expr: &Expr) -> &Expr {
    loop {
        expr = match expr {
            Expr::TsAs(e) => &e.expr,
            Expr::TsSatisfies(e) => &e.expr,
            Expr::TsNonNull(e) => &e.expr,
            Expr::TsConstAssertion(e) => &e.expr,
            Expr::Paren(e) => &e.expr,
            _ => return expr,
        };
    }
}

/// An argument that is a plain expression (not `...spread`).
fn plain(argument: Option<&ExprOrSpread>) -> Option<&Expr> {
    argument.filter(|a| a.spread.is_none()).map(|a| &*a.expr)
}

fn callee_name(call: &CallExpr) -> Option<String> {
    match &call.callee {
        Callee::Expr(callee) => match &**callee {
            Expr::Ident(ident) => Some(ident.sym.to_string()),
            Expr::Member(member) => match &member.prop {
                MemberProp::Ident(name) => Some(name.sym.to_string()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The key of a translation call: `t('k')`, `i18n.t('k')`, `t(['k', …])`,
/// `formatMessage({ id: 'k' })`.
pub fn key_of_call(expr: &Expr) -> Option<String> {
    let Expr::Call(call) = unwrap(expr) else { return None };
    let first = plain(call.args.first());
    match callee_name(call)?.as_str() {
        "t" => {
            let first = first?;
            static_string(first).or_else(|| match first {
                Expr::Array(array) => static_string(plain(array.elems.first()?.as_ref())?),
                _ => None,
            })
        }
        "formatMessage" => {
            let Expr::Object(object) = first? else { return None };
            object.props.iter().find_map(|p| match p {
                PropOrSpread::Prop(prop) => match &**prop {
                    Prop::KeyValue(kv) if property_is_id(&kv.key) => Some(static_string(&kv.value)),
                    _ => None,
                },
                PropOrSpread::Spread(_) => None,
            })?
        }
        _ => None,
    }
}

fn property_is_id(key: &PropName) -> bool {
    match key {
        PropName::Ident(name) => name.sym == *"id",
        PropName::Str(s) => s.value.as_str() == Some("id"),
        _ => false,
    }
}

/// The key of a child that is a translation: `{t('k')}`, `<Trans i18nKey="k">`, `<FormattedMessage id="k">`.
fn key_of_child(child: &JSXElementChild) -> Option<String> {
    match child {
        JSXElementChild::JSXExprContainer(container) => match &container.expr {
            JSXExpr::Expr(expr) => key_of_call(expr),
            JSXExpr::JSXEmptyExpr(_) => None,
        },
        JSXElementChild::JSXElement(element) => {
            let name = element_name(&element.opening.name)?;
            match name.rsplit('.').next()? {
                "Trans" => attribute_string(&element.opening, "i18nKey"),
                "FormattedMessage" => attribute_string(&element.opening, "id"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The key of a label attribute that is a translation: `aria-label={t('k')}`.
fn key_of_label(opening: &JSXOpeningElement, name: &str) -> Option<String> {
    match attribute(opening, name)?.value.as_ref()? {
        JSXAttrValue::JSXExprContainer(container) => match &container.expr {
            JSXExpr::Expr(expr) => key_of_call(expr),
            JSXExpr::JSXEmptyExpr(_) => None,
        },
        _ => None,
    }
}

/// The i18n key an element's text is: the one translation among its children, or, for a
/// control without translated text, the translation in its label attribute.
pub fn translation_key(element: &JSXElement) -> Option<String> {
    let child_keys = element.children.iter().filter_map(key_of_child).collect();
    let label_keys =
        LABEL_ATTRIBUTES.iter().filter_map(|name| key_of_label(&element.opening, name)).collect();
    rules::translation_key(child_keys, label_keys)
}
