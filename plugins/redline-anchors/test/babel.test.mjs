// The Babel transform's own behaviour: its switch, its path constant, what it leaves alone.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";
import { transformSync } from "@babel/core";

const require = createRequire(import.meta.url);
const plugin = require("../src/babel.cjs");
const { kebabCase } = plugin;

const ROOT = "/repo";
const SHA = "a91c4e2a91c4e2a91c4e2a91c4e2a91c4e2a91c4";

/** The transformed source (JSX kept) of `code` at `file`, with the plugin on unless told. */
function stamp(code, { file = "/repo/src/routes/app.orders.tsx", ...options } = {}) {
  return transformSync(code, {
    filename: file,
    babelrc: false,
    configFile: false,
    parserOpts: { plugins: ["jsx", "typescript"] },
    plugins: [[plugin, { enabled: true, root: ROOT, sha: SHA, ...options }]],
  }).code;
}

// What each element gets is in fixtures/, shared with the SWC plugin (fixtures.test.mjs).
describe("redline-anchors Babel plugin", () => {
  test("off by default: the code is what Babel alone prints", () => {
    const code = `export function Toolbar() {\n  return <div><button onClick={go}>{t("orders.export")}</button></div>;\n}`;
    const plain = transformSync(code, { filename: "/repo/a.tsx", babelrc: false, configFile: false, parserOpts: { plugins: ["jsx", "typescript"] } }).code;
    const saved = process.env.REDLINE_ANCHORS;
    delete process.env.REDLINE_ANCHORS;
    try {
      assert.equal(stamp(code, { enabled: undefined }), plain);
      assert.equal(stamp(code, { enabled: false }), plain);
      process.env.REDLINE_ANCHORS = "1";
      assert.notEqual(stamp(code, { enabled: undefined }), plain, "REDLINE_ANCHORS=1 turns it on");
    } finally {
      if (saved === undefined) delete process.env.REDLINE_ANCHORS;
      else process.env.REDLINE_ANCHORS = saved;
    }
  });

  test("one path string per module, repo-relative with forward slashes", () => {
    const out = stamp("const A = () => <button>a</button>;\nconst B = () => <button>b</button>;", { file: "/repo/src/x/B.jsx" });
    assert.equal(out.match(/"src\/x\/B\.jsx"/g).length, 1);
    assert.match(out, /^const _fabricSrc = "src\/x\/B\.jsx";/);
    assert.equal(stamp("const A = () => <button>a</button>;", { file: "/elsewhere/A.jsx" }).includes("fabric"), false, "files outside the root are left alone");
    assert.equal(stamp("const A = () => <button>a</button>;", { file: "/repo/node_modules/lib/A.jsx" }).includes("fabric"), false, "dependencies are left alone");
  });

  test("a JSX <head> gets no commit with meta: false", () => {
    assert.doesNotMatch(stamp("const L = () => <html><head /></html>;", { meta: false }), /fabric-git-sha/);
  });

  test("kebab-case component names", () => {
    assert.equal(kebabCase("OrderToolbar"), "order-toolbar");
    assert.equal(kebabCase("HTMLView"), "html-view");
    assert.equal(kebabCase("App"), "app");
    assert.equal(kebabCase("Step2Form"), "step2-form");
    assert.equal(kebabCase("My_Thing"), "my-thing");
  });
});
