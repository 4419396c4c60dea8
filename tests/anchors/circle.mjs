// One review build circled through the extension: the build is served, its toolbar's
// export button is circled and filed, and the item must carry the i18n key as test id,
// the button's source line, the toolbar's component test id and the build's commit.
// Shared by every stack's build test (Vite's React, Vue and Svelte apps; Next.js).
import assert from "node:assert/strict";
import { drawLasso, openOverlay, startConnected, watchErrors } from "../e2e/harness.mjs";
import { gitHead, lineOf, serveDir } from "./build.mjs";

const VIEWPORT = { width: 1200, height: 700 };

/**
 * Serves `dir`, circles its export button and checks the filed item (`toolbar`: the
 * repo-relative file that holds the button), then runs `pageChecks(page)`. Resolves with
 * the browser, for more pages, and `stop()`, which closes everything it started.
 */
export async function circleTheExportButton(dir, { toolbar, pageChecks = async () => {} }) {
  const { stage, server, browser, stop } = await startConnected(await serveDir(dir));
  try {
    await fileAndCheck(browser, server, stage.url, toolbar, pageChecks);
  } catch (e) {
    await stop();
    throw e;
  }
  return { browser, stop };
}

async function fileAndCheck(browser, server, url, toolbar, pageChecks) {
  const { page, overlay } = await openOverlay(browser, `${url}/`, VIEWPORT);
  const errors = watchErrors(page);
  const sha = await page.locator('meta[name="fabric-git-sha"]').getAttribute("content");
  assert.equal(sha, gitHead(), "the page states the commit it was built from");

  const button = page.getByTestId("orders.export");
  await drawLasso(page, await button.boundingBox());
  const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
  await composer.getByRole("textbox").fill("Export is cramped");
  await composer.getByRole("textbox").press("Enter");
  await composer.waitFor({ state: "detached" });

  // Up to 30 s: on a loaded 2-core machine the worker's delivery has once taken over 10.
  let filed;
  for (let i = 0; i < 300 && !filed; i++) {
    filed = await server.itemTitled("Export is cramped");
    if (!filed) await page.waitForTimeout(100);
  }
  assert.ok(filed, "the server has the item");
  assert.equal(filed.gitSha, gitHead());
  const [element, ...others] = filed.capture.elements;
  assert.deepEqual(others, [], "only the button was circled");
  assert.equal(element.tag, "button");
  assert.equal(element.text, "Export CSV");
  assert.equal(element.testId, "orders.export", "the test id is the i18n key");
  assert.equal(element.sourceAnchor, `${toolbar}:${lineOf(toolbar, "<button")}`);
  assert.equal(element.componentTestId, "order-toolbar", "the component root is named after OrderToolbar");
  await pageChecks(page);
  assert.deepEqual(errors, []);
  await page.close();
}
