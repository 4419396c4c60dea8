// One fixture set, both JSX transforms: each file in fixtures/ is stamped by the Babel
// plugin and by the SWC plugin, and both must give every intrinsic element exactly the
// attributes its .json lists (anchor, test id, the meta tag's content, and where a
// spread is, the attributes' order).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseSync, transformSync as babelTransform, traverse } from "@babel/core";
import { transformSync as swcTransform } from "@swc/core";

const require = createRequire(import.meta.url);
const babelPlugin = require("../src/babel.cjs");

/** The built SWC plugin (`cargo xtask anchors-swc`; `cargo xtask test` builds it first). */
const SWC_PLUGIN = fileURLToPath(new URL("../swc/redline_anchors_swc.wasm", import.meta.url));

const typescript = (file) => file.endsWith(".tsx");

/** Babel with the plugin on: JSX and types kept. */
function babelStamp(code, file, { root, sha }) {
  return babelTransform(code, {
    filename: file,
    babelrc: false,
    configFile: false,
    parserOpts: { plugins: typescript(file) ? ["jsx", "typescript"] : ["jsx"] },
    plugins: [[babelPlugin, { enabled: true, root, sha }]],
  }).code;
}

/** SWC with the plugin: JSX kept, types stripped. */
function swcStamp(code, file, { root, sha }) {
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
function stampedElements(code) {
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

const FIXTURES = fileURLToPath(new URL("fixtures", import.meta.url));
const SHA = "a91c4e2a91c4e2a91c4e2a91c4e2a91c4e2a91c4";
const TRANSFORMS = { Babel: babelStamp, SWC: swcStamp };
const sources = readdirSync(FIXTURES).filter((f) => /\.[jt]sx$/.test(f));

for (const [name, stamp] of Object.entries(TRANSFORMS)) {
  describe(`the ${name} plugin on the shared fixtures`, () => {
    for (const source of sources) {
      test(source, () => {
        const file = join(FIXTURES, source);
        const code = readFileSync(file, "utf8");
        const expected = JSON.parse(readFileSync(file.replace(/\.[jt]sx$/, ".json"), "utf8"));
        const out = stamp(code, file, { root: FIXTURES, sha: SHA });
        const { elements, paths, directives } = stampedElements(out);
        assert.deepEqual(elements, expected);
        assert.deepEqual([...paths.values()].filter((p) => p === source), [source], "the module holds its path once");
        if (code.startsWith('"use client"')) assert.deepEqual(directives, ["use client"], "the directive stays first");
      });
    }
  });
}

describe("files the SWC plugin leaves alone", () => {
  const code = "export const A = () => <button>a</button>;";
  for (const [where, file] of [["outside the root", "/elsewhere/A.jsx"], ["a dependency", join(FIXTURES, "node_modules/lib/A.jsx")]]) {
    test(where, () => {
      assert.doesNotMatch(swcStamp(code, file, { root: FIXTURES, sha: SHA }), /fabric/);
    });
  }
});
