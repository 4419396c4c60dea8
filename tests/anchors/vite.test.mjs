// The plugin in real Vite builds of React, Vue and Svelte apps: built with it on, the app
// is served, a button is circled through the extension and the filed item names the i18n
// key, the source line and the build's commit; built with it off, the app has no anchors
// and is the same, byte for byte, as a build without the plugin. The apps are alike: the
// toolbar's controls are translated, the order list has a hand-written test id and its
// rows are a component's roots; each stack's own forms are checked by `pageChecks`.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { assertSameFiles, lineOf, serveDir, textOf, viteBuild } from "./build.mjs";
import { circleTheExportButton } from "./circle.mjs";

/** React: the hand-written test id of the list wins; its rows are OrderRow's roots; `<Trans i18nKey>` names its element. */
async function reactChecks(page) {
  const app = "tests/anchors/vite-app/src/App.tsx";
  const list = page.getByTestId("order-list");
  assert.equal(await list.getAttribute("data-fabric-src"), null, "the list is neither a control nor a root");
  assert.deepEqual(
    await page.locator('[data-testid="order-row"]').evaluateAll((rows) => rows.map((r) => r.dataset.fabricSrc)),
    Array(2).fill(`${app}:${lineOf(app, "<li>")}`),
  );
  assert.equal(await page.getByTestId("orders.summary").evaluate((e) => e.tagName), "P", "<Trans i18nKey> names its element");
}

/** Vue and Svelte: translated labels, the list's own test id, rows as roots, no root for a component-only or two-root component. */
function templateChecks(file) {
  return async (page) => {
    const toolbar = file("OrderToolbar");
    // A translated label names a control without translated text.
    assert.equal(await page.getByTestId("orders.search").getAttribute("data-fabric-src"), `${toolbar}:${lineOf(toolbar, "<input")}`);
    // The hand-written test id of the list wins over its component's name; its rows are OrderRow's roots.
    const rows = file("OrderRows");
    assert.equal(await page.getByTestId("orders-table").getAttribute("data-fabric-src"), `${rows}:${lineOf(rows, "<ul")}`);
    const row = file("OrderRow");
    assert.deepEqual(
      await page.locator('[data-testid="order-row"]').evaluateAll((list) => list.map((r) => r.dataset.fabricSrc)),
      Array(2).fill(`${row}:${lineOf(row, "<li")}`),
    );
    // OrderList is another component and OrderSummary a fragment: neither has a root to stamp.
    assert.equal(await page.locator('[data-testid="order-list"], [data-testid="order-summary"]').count(), 0);
    assert.equal(await page.getByTestId("orders.empty").getAttribute("data-fabric-src"), null, "a fragment's element is no root");
    assert.equal(await page.getByTestId("orders.title").evaluate((e) => e.tagName), "H1");
  };
}

const vue = (name) => `tests/anchors/vue-app/src/components/${name}.vue`;
const svelte = (name) => `tests/anchors/svelte-app/src/lib/${name}.svelte`;
const STACKS = [
  { stack: "React", app: "vite-app", toolbar: "tests/anchors/vite-app/src/App.tsx", pageChecks: reactChecks },
  // The same React app compiled by SWC (@vitejs/plugin-react-swc) with the SWC plugin.
  { stack: "React with SWC", app: "vite-swc-app", toolbar: "tests/anchors/vite-app/src/App.tsx", pageChecks: reactChecks },
  { stack: "Vue", app: "vue-app", toolbar: vue("OrderToolbar"), pageChecks: templateChecks(vue) },
  { stack: "Svelte", app: "svelte-app", toolbar: svelte("OrderToolbar"), pageChecks: templateChecks(svelte) },
];

for (const { stack, app, toolbar, pageChecks } of STACKS) {
  describe(`redline-anchors in a Vite + ${stack} build`, () => {
    const out = mkdtempSync(join(tmpdir(), `redline-anchors-${app}-`));
    const dist = { on: join(out, "on"), off: join(out, "off"), none: join(out, "none") };
    const ms = {};
    let circled;

    before(async () => {
      // Same run, same machine state: off, on, and without the plugin, then on and off again.
      ms.off = [viteBuild(dist.off, {}, app)];
      ms.on = [viteBuild(dist.on, { REDLINE_ANCHORS: "1" }, app)];
      ms.none = [viteBuild(dist.none, { ANCHORS_TEST_WITHOUT_PLUGIN: "1" }, app)];
      ms.on.push(viteBuild(dist.on, { REDLINE_ANCHORS: "1" }, app));
      ms.off.push(viteBuild(dist.off, {}, app));
    });

    after(async () => {
      await circled?.stop();
      rmSync(out, { recursive: true, force: true });
    });

    test("build time with and without the plugin", (t) => {
      const best = (list) => Math.min(...list).toFixed(0);
      t.diagnostic(`vite build, best of 2: plugin on ${best(ms.on)} ms, plugin off ${best(ms.off)} ms, no plugin ${best(ms.none)} ms`);
      assert.ok(ms.on.length === 2 && ms.off.length === 2);
    });

    test("off: no anchors, no commit, and byte-identical to a build without the plugin", () => {
      assertSameFiles(dist.off, dist.none);
      const text = textOf(dist.off);
      assert.doesNotMatch(text, /data-fabric-src|fabric-git-sha/);
      assert.doesNotMatch(text, /order-toolbar/, "no component test ids either");
    });

    test("on: a circled button's item carries the i18n key, its source line and the build's commit", async () => {
      circled = await circleTheExportButton(dist.on, { toolbar, pageChecks });
    });

    test("off, in the browser: the page has no anchors", async () => {
      const offStage = await serveDir(dist.off);
      try {
        const page = await circled.browser.context.newPage();
        await page.goto(`${offStage.url}/`);
        await page.getByText("Export CSV").waitFor();
        assert.equal(await page.locator("[data-fabric-src], [data-testid], meta[name=fabric-git-sha]").count(), 1, "only the hand-written test id");
        await page.close();
      } finally {
        await offStage.stop();
      }
    });
  });
}
