// The transform on small JSX/TSX inputs: what is stamped where, and what is left alone.
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

/** The attributes the plugin gave each element, read back by evaluating the anchors. */
function attributes(code, options) {
  const out = stamp(code, options);
  const path = out.match(/const _fabricSrc = "([^"]*)";/)?.[1];
  return [...out.matchAll(/<([a-z][\w.]*)((?:\s+[^\s>=]+(?:=(?:"[^"]*"|\{[^}]*\}))?)*)\s*\/?>/g)].map(([, tag, attrs]) => {
    const found = { tag };
    for (const [, name, value] of attrs.matchAll(/([\w:-]+)=(?:"([^"]*)"|\{([^}]*)\})/g)) found[name] = value;
    for (const [, name, expression] of attrs.matchAll(/([\w:-]+)=\{([^}]*)\}/g)) {
      const anchor = expression.match(/^_fabricSrc \+ ":(\d+)"$/);
      found[name] = anchor ? `${path}:${anchor[1]}` : `{${expression}}`;
    }
    return found;
  });
}

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

  test("interactive elements and component roots get anchors naming their line", () => {
    const els = attributes(
      [
        "export function OrderToolbar() {", //            1
        "  return (", //                                   2
        '    <div className="toolbar">', //                3
        '      <input type="search" />', //                4
        "      <button onClick={exportCsv}>{t('orders.export')}</button>", // 5
        '      <span role="button" onKeyDown={k}>x</span>', // 6
        '      <div role="link">y</div>', //               7
        "      <p>plain</p>", //                           8
        '      <a href="/">home</a>', //                   9
        "    </div>", //                                  10
        "  );", //                                        11
        "}",
      ].join("\n"),
    );
    const by = (tag, i = 0) => els.filter((e) => e.tag === tag)[i];
    assert.equal(by("div")["data-fabric-src"], "src/routes/app.orders.tsx:3");
    assert.equal(by("div")["data-testid"], "order-toolbar");
    assert.equal(by("input")["data-fabric-src"], "src/routes/app.orders.tsx:4");
    assert.equal(by("input")["data-testid"], undefined, "no text, no root: no test id");
    assert.equal(by("button")["data-fabric-src"], "src/routes/app.orders.tsx:5");
    assert.equal(by("button")["data-testid"], "orders.export");
    assert.equal(by("span")["data-fabric-src"], "src/routes/app.orders.tsx:6");
    assert.equal(by("div", 1)["data-fabric-src"], "src/routes/app.orders.tsx:7");
    assert.equal(by("p")["data-fabric-src"], undefined, "a plain paragraph is no control");
    assert.equal(by("a")["data-fabric-src"], "src/routes/app.orders.tsx:9");
  });

  test("one path string per module, repo-relative with forward slashes", () => {
    const out = stamp("const A = () => <button>a</button>;\nconst B = () => <button>b</button>;", { file: "/repo/src/x/B.jsx" });
    assert.equal(out.match(/"src\/x\/B\.jsx"/g).length, 1);
    assert.match(out, /^const _fabricSrc = "src\/x\/B\.jsx";/);
    assert.equal(stamp("const A = () => <button>a</button>;", { file: "/elsewhere/A.jsx" }).includes("fabric"), false, "files outside the root are left alone");
    assert.equal(stamp("const A = () => <button>a</button>;", { file: "/repo/node_modules/lib/A.jsx" }).includes("fabric"), false, "dependencies are left alone");
  });

  test("a hand-written test id wins; the anchor is still added; spreads come after", () => {
    const [root, button] = attributes('function Panel(props) {\n  return <section data-testid="my-panel"><button {...props} data-testid="mine">{t("k")}</button></section>;\n}');
    assert.equal(root["data-testid"], "my-panel");
    assert.equal(root["data-fabric-src"], "src/routes/app.orders.tsx:2");
    assert.equal(button["data-testid"], "mine");
    const out = stamp("function Panel(props) {\n  return <button {...props}>{t('k')}</button>;\n}");
    assert.match(out, /<button data-fabric-src=\{_fabricSrc \+ ":2"\} data-testid="k" \{\.\.\.props\}>/, "ours first, so a spread overrides them");
  });

  test("test ids from each i18n library's translation", () => {
    const els = attributes(
      [
        "function Page() {",
        "  const { t } = useTranslation();",
        "  const intl = useIntl();",
        "  return <main>",
        "    <h1>{t('orders.title')}</h1>",
        "    <p>{i18n.t(`orders.summary`, { count })}</p>",
        "    <label><Trans i18nKey=\"orders.new.customer\">Customer</Trans></label>",
        "    <h2>{intl.formatMessage({ id: 'orders.new.title' })}</h2>",
        "    <button type=\"submit\"><Icon /> <FormattedMessage id=\"orders.new.submit\" /></button>",
        "    <input aria-label={t('orders.search')} />",
        "    <span>{t(dynamicKey)}</span>",
        "    <em>{t('a')}{t('b')}</em>",
        "  </main>;",
        "}",
      ].join("\n"),
    );
    const id = (tag) => els.find((e) => e.tag === tag)["data-testid"];
    assert.equal(id("main"), "page");
    assert.equal(id("h1"), "orders.title");
    assert.equal(id("p"), "orders.summary");
    assert.equal(id("label"), "orders.new.customer");
    assert.equal(id("h2"), "orders.new.title");
    assert.equal(id("button"), "orders.new.submit");
    assert.equal(id("input"), "orders.search");
    assert.equal(id("span"), undefined, "a key only known at run time is not guessed");
    assert.equal(id("em"), undefined, "two keys: no one key is the text");
  });

  test("component roots: declarations, arrows, memo/forwardRef, classes, conditionals; not callbacks", () => {
    const els = attributes(
      [
        "export default function OrderList({ rows }) {",
        "  return <ul>{rows.map((r) => <li key={r.id}>{r.name}</li>)}</ul>;",
        "}",
        "const OrderRow = memo(forwardRef((props, ref) => <tr ref={ref} />));",
        "class HTMLReport extends React.Component { render() { return <article />; } }",
        "function Status({ ok }) { return ok ? <b /> : <i />; }",
        "function helper() { return <div />; }",
        "const Wrapper = () => <><section /></>;",
      ].join("\n"),
    );
    const id = (tag) => els.find((e) => e.tag === tag)["data-testid"];
    assert.equal(id("ul"), "order-list");
    assert.equal(id("li"), undefined);
    assert.equal(id("tr"), "order-row");
    assert.equal(id("article"), "html-report");
    assert.equal(id("b"), "status");
    assert.equal(id("i"), "status");
    assert.equal(id("div"), undefined, "a lower-case function is no component");
    assert.equal(id("section"), undefined, "a fragment root has no element to stamp");
    assert.equal(els.find((e) => e.tag === "li")["data-fabric-src"], undefined);
  });

  test("the commit goes into a JSX <head>, once", () => {
    const out = stamp("export default function RootLayout({ children }) {\n  return <html><head /><body>{children}</body></html>;\n}");
    assert.match(out, new RegExp(`<head><meta name="fabric-git-sha" content="${SHA}" /></head>`));
    const kept = stamp('const L = () => <html><head><meta name="fabric-git-sha" content="x" /></head></html>;');
    assert.equal(kept.match(/fabric-git-sha/g).length, 1, "a written one is kept");
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
