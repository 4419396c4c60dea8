// The plugin in real Next.js builds (App Router, Turbopack, static export) of next-app:
// with the SWC plugin (withRedlineAnchors in next.config.mjs) on, off and absent, and
// with the Babel plugin (a babel.config.js written for that build only, as docs/anchors.md
// says). On, the exported page carries the anchors, test ids and commit, and the SWC
// build is circled through the extension; off is byte-identical to absent; Babel and
// SWC stamp the same page.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { assertSameFiles, gitHead, lineOf, nextBabelBuild, nextBuild, textOf } from "./build.mjs";
import { circleTheExportButton } from "./circle.mjs";

const file = (name) => `tests/anchors/next-app/app/${name}`;

/** The opening tags of the page's body that carry an anchor or a test id, in order. */
const stampedTags = (html) => html.slice(html.indexOf("<body")).match(/<[a-z][\w-]*\s[^>]*data-(fabric-src|testid)=[^>]*>/g);

describe("redline-anchors in a Next.js build", () => {
  const out = mkdtempSync(join(tmpdir(), "redline-anchors-next-"));
  const dist = { swc: join(out, "swc"), off: join(out, "off"), none: join(out, "none"), babel: join(out, "babel") };
  const ms = {};
  let circled;

  before(() => {
    ms.off = nextBuild(dist.off, {});
    ms.swc = nextBuild(dist.swc, { REDLINE_ANCHORS: "1" });
    ms.none = nextBuild(dist.none, { ANCHORS_TEST_WITHOUT_PLUGIN: "1" });
    ms.babel = nextBabelBuild(dist.babel);
  });

  after(async () => {
    await circled?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  test("build time with the SWC plugin, without it, and with the Babel plugin", (t) => {
    const { off, swc, none, babel } = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v.toFixed(0)]));
    t.diagnostic(`next build: SWC plugin on ${swc} ms, off ${off} ms, absent ${none} ms; Babel plugin on ${babel} ms`);
    assert.equal(Object.keys(ms).length, 4);
  });

  test("off: no anchors, no commit, and byte-identical to a build without the plugin", () => {
    assertSameFiles(dist.off, dist.none);
    assert.doesNotMatch(textOf(dist.off), /data-fabric-src|fabric-git-sha|data-testid="(orders\.|order-toolbar)/);
  });

  test("SWC on: the exported page carries anchors, test ids and the commit", async () => {
    const html = textOf(dist.swc);
    const [toolbar, page, orders] = [file("toolbar.jsx"), file("page.jsx"), file("orders.jsx")];
    const at = (f, needle) => `data-fabric-src="${f}:${lineOf(f, needle)}"`;
    assert.ok(html.includes(`<button ${at(toolbar, "<button")} data-testid="orders.export" type="button"`), "a client component's button");
    assert.ok(html.includes(`<div ${at(toolbar, "<div")} data-testid="order-toolbar"`));
    assert.ok(html.includes(`<main ${at(page, "<main")} data-testid="orders-page">`));
    assert.ok(html.includes('<h1 data-testid="orders.title">'), "a heading gets its key, but no anchor");
    assert.ok(html.includes(`<ul ${at(orders, "<ul")} data-testid="orders-table">`), "the hand-written test id wins");
    assert.equal(html.split(`<li ${at(orders, "<li>")} data-testid="order-row">`).length, 3, "each row is OrderRow's root");
    assert.doesNotMatch(html, /order-list|order-summary/, "a component returning another, and a fragment, have no root");
    assert.ok(html.includes('<p data-testid="orders.empty">'), "a fragment's element is no root");
    assert.ok(html.includes(`<meta name="fabric-git-sha" content="${gitHead()}"/>`));
  });

  test("Babel on: the same page as SWC's", () => {
    const [swc, babel] = [dist.swc, dist.babel].map((d) => stampedTags(readFileSync(join(d, "index.html"), "utf8")));
    assert.ok(swc.length >= 8);
    assert.deepEqual(babel, swc);
    assert.ok(textOf(dist.babel).includes(`<meta name="fabric-git-sha" content="${gitHead()}"/>`));
  });

  test("SWC on: a circled button's item carries the i18n key, its source line and the build's commit", async () => {
    circled = await circleTheExportButton(dist.swc, { toolbar: file("toolbar.jsx") });
  });
});
