//! redline-anchors' SWC plugin: the Babel plugin's rules (`../src/babel.cjs`) for builds
//! that compile JSX with SWC (Next.js without a Babel config, `@vitejs/plugin-react-swc`).
//! Stamps `data-fabric-src="path:LINE"` and `data-testid` on JSX, and the commit into a
//! JSX `<head>`. It runs only when added: the JavaScript side (`../src/next.cjs`,
//! `../src/vite.mjs`) adds it when anchors are on, with the repository root and the commit
//! it worked out, as Babel's plugin does, since a plugin sees no environment or git.

mod jsx;
mod path;
mod roots;
mod rules;
mod stamp;

use serde::Deserialize;
use swc_core::common::DUMMY_SP;
use swc_core::ecma::ast::{
    Decl, Expr, Ident, Lit, ModuleItem, Program, Stmt, Str, VarDecl, VarDeclKind, VarDeclarator,
};
use swc_core::ecma::visit::VisitMutWith;
use swc_core::plugin::metadata::{TransformPluginMetadataContextKind, TransformPluginProgramMetadata};
use swc_core::plugin::plugin_transform;

use crate::stamp::Stamper;

/// The plugin's options, as the JavaScript side writes them.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Options {
    /// What anchors are relative to (absolute); relative to `cwd` if not.
    root: Option<String>,
    /// What a relative file name is relative to (Turbopack's root); `cwd` if none.
    base: Option<String>,
    /// The commit written into a JSX `<head>`; none, no meta tag.
    sha: Option<String>,
}

#[plugin_transform]
pub fn redline_anchors(mut program: Program, metadata: TransformPluginProgramMetadata) -> Program {
    let options: Options = metadata
        .get_transform_plugin_config()
        .map(|json| serde_json::from_str(&json).expect("redline-anchors/swc: the options are not valid JSON"))
        .unwrap_or_default();
    let cwd = metadata.get_context(&TransformPluginMetadataContextKind::Cwd).unwrap_or_default();
    let Some(filename) = metadata.get_context(&TransformPluginMetadataContextKind::Filename) else {
        return program;
    };
    let base = options.base.unwrap_or_else(|| cwd.clone());
    let root = options.root.unwrap_or_else(|| cwd.clone());
    let Some(anchor_path) = path::anchor_path(&filename, &root, &base) else {
        return program;
    };
    let mut stamper = Stamper {
        roots: roots::find(&program),
        source_map: &metadata.source_map,
        sha: options.sha,
        path_ident: None,
    };
    program.visit_mut_with(&mut stamper);
    if let Some(ident) = stamper.path_ident {
        declare_path(&mut program, ident, &anchor_path);
    }
    program
}

/// `const _fabricSrc = "src/…tsx";` first in the module, after its directives (`"use client"`).
fn declare_path(program: &mut Program, ident: Ident, anchor_path: &str) {
    let declaration = Stmt::Decl(Decl::Var(Box::new(VarDecl {
        kind: VarDeclKind::Const,
        decls: vec![VarDeclarator {
            span: DUMMY_SP,
            name: ident.into(),
            init: Some(Box::new(Expr::Lit(Lit::Str(Str::from(anchor_path))))),
            definite: false,
        }],
        ..Default::default()
    })));
    match program {
        Program::Module(module) => {
            let at = module.body.iter().take_while(|item| item.as_stmt().is_some_and(is_directive)).count();
            module.body.insert(at, ModuleItem::Stmt(declaration));
        }
        Program::Script(script) => {
            let at = script.body.iter().take_while(|stmt| is_directive(stmt)).count();
            script.body.insert(at, declaration);
        }
    }
}

fn is_directive(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Expr(e) if matches!(&*e.expr, Expr::Lit(Lit::Str(_))))
}
