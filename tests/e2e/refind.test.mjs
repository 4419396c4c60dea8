// Items re-found on a new build, end to end: three items are filed on the demo stage's
// first build (the Export button, the summary line, the heading); the stage then serves a
// second build (a changed copy of demo/) that moves the Export button out of its toolbar
// and removes the summary; the stage tab is reloaded. The side panel, following that tab,
// sees the new build, looks for each item's elements again, marks the Export row `moved`
// (its "Show on page" outlines the button where it is now) and the summary row `gone`,
// leaves the heading's row as it was, and records each finding on the server, where
// `redline show` prints it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  agentWorkspace,
  assertAccessible,
  launchBrowser,
  openConnectedPanel,
  prepareServer,
  startStage,
} from "./harness.mjs";

const run = promisify(execFile);
const demo = fileURLToPath(new URL("../../demo", import.meta.url));
const started = Date.now();
/** Says on stderr how far the file got (node prints a file's results only at its end). */
const step = (what) => process.stderr.write(`refind.test.mjs: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);

describe("items re-found on a new build", () => {
  let stage, server, browser, panel, stagePage, work, agentEnv;
  const errors = [];

  before(async () => {
    stage = await startStage();
    server = await prepareServer({ stageUrl: stage.url });
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    panel = await openConnectedPanel(browser, server, { viewport: { width: 420, height: 900 }, errors });
    ({ work, env: agentEnv } = agentWorkspace(server, "redline-e2e-refind-"));
    step("stage, server and panel up");
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    await stage?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Files an item on the page as it is, with one element: `testId` at `cssPath`. */
  async function file(title, testId, cssPath, tag, sha) {
    const rect = await stagePage.getByTestId(testId).boundingBox();
    assert.ok(rect, `${testId} is on the first build`);
    const resolved = await stagePage.evaluate(([path, id]) => document.querySelector(path)?.dataset.testid === id, [cssPath, testId]);
    assert.ok(resolved, `${cssPath} leads to ${testId} on the first build`);
    const { change } = await server.rpc("createChange", {
      stageId: server.stageId,
      title,
      route: "/",
      gitSha: sha,
      viewport: { width: 1200, height: 700 },
      capture: { stroke: [], devicePixelRatio: 1, scroll: { x: 0, y: 0 }, elements: [{ testId, cssPath, tag, rect }] },
    });
    return change;
  }

  const row = (title) => panel.getByTestId("queue-row").filter({ hasText: title });
  const mark = (title, whereabouts) => row(title).locator(`[data-testid="row-refind"][data-whereabouts="${whereabouts}"]`);

  test("a new build with a moved and a removed element marks both rows and records what it found", { timeout: 170_000 }, async () => {
    stagePage = await browser.context.newPage();
    await stagePage.setViewportSize({ width: 1200, height: 700 });
    await stagePage.goto(`${stage.url}/`);
    const firstSha = await stagePage.locator('meta[name="fabric-git-sha"]').getAttribute("content");
    const moved = await file("Export is cramped", "orders.export", ".toolbar > button", "button", firstSha);
    const gone = await file("Summary is wrong", "orders.summary", "p.summary", "p", firstSha);
    const kept = await file("Heading is too big", "orders.title", ".section-head > h1", "h1", firstSha);
    await server.rpc("releaseChanges", { stageId: server.stageId });

    // The panel follows the stage's tab and lists the three, unmarked: they were filed on
    // the build it serves.
    await stagePage.bringToFront();
    await panel.getByTestId("scope-line").getByText("Stage main").waitFor();
    for (const title of ["Export is cramped", "Summary is wrong", "Heading is too big"]) await row(title).waitFor();
    assert.equal(await panel.getByTestId("row-refind").count(), 0, "nothing is re-found on the build items were filed on");
    step("filed on the first build");

    // The second build: the Export button leaves the toolbar for the heading's line, and
    // the summary line is gone.
    const app = mkdtempSync(join(work, "build-"));
    for (const source of ["index.html", "vite.config.ts", "package.json", "package-lock.json", "src", "public"]) {
      cpSync(join(demo, source), join(app, source), { recursive: true });
    }
    const appSource = join(app, "src/App.tsx");
    const first = readFileSync(appSource, "utf8");
    const exportButton = '<button type="button">{t("orders.export")}</button>';
    const second = first
      .replace(`      ${exportButton}\n`, "")
      .replace("<OrderToolbar />", `<OrderToolbar />\n        ${exportButton}`)
      .replace(/ *<p className="summary">[^\n]*\n/, "");
    assert.equal(second.split(exportButton).length, 2, "the button is written once, in its new place");
    assert.ok(!second.includes('className="summary"'), "the summary is removed");
    writeFileSync(appSource, second);
    const secondSha = "b2c3d4e5f60718293a4b5c6d7e8f901234567890";
    const addr = stage.addr;
    await stage.stop();
    stage = await startStage({ addr, app, sha: secondSha });
    step("the stage serves the second build");
    await stagePage.reload();
    assert.equal(await stagePage.locator('meta[name="fabric-git-sha"]').getAttribute("content"), secondSha);
    assert.equal(await stagePage.locator(".toolbar button").count(), 0, "the button left the toolbar");

    // Both rows are marked, as soon as the panel sees the reloaded tab.
    await mark("Export is cramped", "moved").waitFor({ timeout: 30_000 });
    await mark("Summary is wrong", "gone").waitFor({ timeout: 30_000 });
    step("both rows marked");
    const said = await mark("Export is cramped", "moved").getAttribute("title");
    assert.match(said, /^re-found on build b2c3d4e: orders\.export moved to `[^`]+`$/);

    // What was found is on the server: the agent reads it with the item.
    const refindOf = async (change) => (await server.rpc("getChange", { changeId: change.changeId })).refind;
    const movedFinding = await refindOf(moved);
    assert.equal(movedFinding.gitSha, secondSha);
    assert.equal(movedFinding.foundBy, "dev");
    assert.deepEqual(movedFinding.elements.map((e) => [e.label, e.whereabouts]), [["orders.export", "moved"]]);
    const newPath = movedFinding.elements[0].cssPath;
    assert.ok(await stagePage.evaluate((path) => document.querySelector(path)?.dataset.testid === "orders.export", newPath), `${newPath} leads to the button now`);
    assert.deepEqual((await refindOf(gone)).elements, [{ label: "orders.summary", whereabouts: "gone" }]);
    // The heading was looked for on the same pass, found in place: its row stays as it was.
    let keptFinding;
    for (let i = 0; i < 100 && !keptFinding; i++) {
      keptFinding = await refindOf(kept);
      if (!keptFinding) await panel.waitForTimeout(100);
    }
    assert.deepEqual(keptFinding?.elements.map((e) => e.whereabouts), ["in_place"]);
    assert.equal(await row("Heading is too big").getByTestId("row-refind").count(), 0);

    const { stdout } = await run(process.env.REDLINE_BIN, ["show", moved.shortId], { env: agentEnv, cwd: work, timeout: 60_000 });
    assert.ok(stdout.includes(`Re-found on build b2c3d4e by dev at `) && stdout.includes(`(moved): orders.export moved to \`${newPath}\``), stdout);

    // "Show on page" on the moved row outlines the button where it is now.
    await assertAccessible(panel, "the panel with moved and gone rows");
    await row("Export is cramped").getByRole("button", { name: `Show on page: #${moved.shortId} where it is now` }).click();
    const host = stagePage.locator("#redline-show-host");
    await host.waitFor({ state: "attached" });
    const [box] = JSON.parse(await host.getAttribute("data-redline-boxes"));
    const button = await stagePage.getByTestId("orders.export").boundingBox();
    assert.equal(box.label, "orders.export");
    assert.ok(Math.abs(box.x - button.x) < 2 && Math.abs(box.y - button.y) < 2, `outlined at ${JSON.stringify(box)}, the button is at ${JSON.stringify(button)}`);
    assert.deepEqual(errors, [], "the panel logged no errors");
  });
});
