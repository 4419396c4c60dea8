// The two JSX transforms, Babel's plugin and SWC's, run the same way over one file, and
// what each stamped read back from its output: every intrinsic element in order, with
// its anchor (the module's path constant resolved), test id, and the meta tag's content.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { parseSync, transformSync as babelTransform, traverse } from "@babel/core";
import { transformSync as swcTransform } from "@swc/core";

const require = createRequire(import.meta.url);
const babelPlugin = require("../src/babel.cjs");

/** The built SWC plugin (`cargo xtask test` builds it first). */
export const SWC_PLUGIN = fileURLToPath(new URL("../swc/redline_anchors_swc.wasm", import.meta.url));

const typescript = (file) => file.endsWith(".tsx");

/** Babel with the plugin on: JSX and types kept. */
export function babelStamp(code, file, { root, sha }) {
  return babelTransform(code, {
    filename: file,
    babelrc: false,
    configFile: false,
    parserOpts: { plugins: typescript(file) ? ["jsx", "typescript"] : ["jsx"] },
    plugins: [[babelPlugin, { enabled: true, root, sha }]],
  }).code;
}

/** SWC with the plugin: JSX kept, types stripped. */
export function swcStamp(code, file, { root, sha }) {
  readFileSync(SWC_PLUGIN); // fails plainly, naming the file, when the plugin was not built
  return swcTransform(code, {
    filename: file,
    swcrc: false,
    configFile: false,
    jsc: {
      parser: typescript(file) ? { syntax: "typescript", tsx: true } : { syntax: "ecmascript", jsx: true },
      target: "esnext",
      transform: { react: { runtime: "preserve" } },
      experimental: { plugins: [[SWC_PLUGIN, { root, sha }]] },
    },
  }).code;
}

const jsxName = (name) => (name.type === "JSXIdentifier" ? name.name : undefined);

function attributeValue(value, paths) {
  if (value?.type === "StringLiteral") return value.value;
  const expression = value?.expression;
  if (expression?.type === "StringLiteral") return expression.value;
  const anchor =
    expression?.type === "BinaryExpression" && expression.left.type === "Identifier" && expression.right.type === "StringLiteral";
  if (anchor && paths.has(expression.left.name)) return paths.get(expression.left.name) + expression.right.value;
  return `{${expression?.type}}`;
}

/**
 * Each intrinsic element of `code` (a transform's output), in order: `{ tag, src,
 * testid, content, order }`, only what it has; `order` (its attributes' names, a spread
 * as "...") only where it has a spread.
 */
export function stampedElements(code) {
  const ast = parseSync(code, { babelrc: false, configFile: false, parserOpts: { plugins: ["jsx", "typescript"] } });
  const paths = new Map();
  for (const statement of ast.program.body) {
    const [declarator] = statement.type === "VariableDeclaration" ? statement.declarations : [];
    if (declarator?.init?.type === "StringLiteral") paths.set(declarator.id.name, declarator.init.value);
  }
  const elements = [];
  traverse(ast, {
    JSXOpeningElement({ node }) {
      const tag = jsxName(node.name);
      if (!tag || !/^[a-z]/.test(tag)) return;
      const found = { tag };
      const named = (name) => node.attributes.find((a) => a.type === "JSXAttribute" && jsxName(a.name) === name);
      for (const [key, name] of [["src", "data-fabric-src"], ["testid", "data-testid"], ["content", "content"]]) {
        if (named(name)) found[key] = attributeValue(named(name).value, paths);
      }
      if (node.attributes.some((a) => a.type === "JSXSpreadAttribute")) {
        found.order = node.attributes.map((a) => (a.type === "JSXSpreadAttribute" ? "..." : jsxName(a.name)));
      }
      elements.push(found);
    },
  });
  return { elements, paths, directives: ast.program.directives.map((d) => d.value.value) };
}
