// Checking a fix on the stage, end to end: an item is filed on the demo stage, the agent
// marks it done with a commit, the stage serves a second build (a changed copy of demo/
// as that commit) and `redline stage deploy` marks the item live; the side panel lists
// it under "Check on stage", opens the stage tab at the item's route, finds the elements
// on the new build, takes an after-shot there and shows it beside the filed screenshot's
// crop; "Fixed" verifies the item, "Still wrong" (with words) reopens it for the agent.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  assertAccessible,
  drawLasso,
  launchBrowser,
  openConnectedPanel,
  openOverlay,
  agentWorkspace,
  prepareServer,
  savePanelScreenshots,
  startStage,
} from "./harness.mjs";

const run = promisify(execFile);
// Each test well inside the file's time (node's --test-timeout, 180 s, applies to the
// whole file too), so that a test that runs out of time is reported as itself.
const TEST_TIMEOUT = 75_000;
const started = Date.now();
/**
 * Says on stderr how far the file got: node's runner prints a file's results only when
 * it ends, so a file that runs out of time would otherwise not say where it was.
 */
const step = (what) => process.stderr.write(`verify.test.mjs: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
const demo = fileURLToPath(new URL("../../demo", import.meta.url));

describe("checking a fix on the stage", () => {
  let stage, server, browser, panel, work, agentEnv, errors;

  before(async () => {
    stage = await startStage();
    server = await prepareServer({ stageUrl: stage.url });
    await server.start();
    step("stage and server up");
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    errors = [];
    panel = await openConnectedPanel(browser, server, { viewport: { width: 420, height: 1000 }, errors });
    step("panel connected");

    ({ work, env: agentEnv } = agentWorkspace(server, "redline-e2e-verify-"));
    await git("init", "-q", "-b", "main");
    await commit("Start");
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    await stage?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  // Bounded, so that a command that hangs fails its test rather than the file's time.
  const git = (...args) => run("git", args, { cwd: join(work, "repo"), env: agentEnv, timeout: 30_000 });
  const redline = (args) => run(process.env.REDLINE_BIN, args, { env: agentEnv, cwd: join(work, "repo"), timeout: 60_000 });

  /** A commit in the agent's checkout; resolves with its sha. */
  async function commit(message) {
    await git("-c", "user.name=agent", "-c", "user.email=agent@example.com", "commit", "-q", "--allow-empty", "-m", message);
    return (await git("rev-parse", "HEAD")).stdout.trim();
  }

  /**
   * The stage serves a new build: a copy of demo/'s sources with `edit` applied to
   * src/App.tsx (text in, text out), built with Vite as the first build was and stating
   * `sha`; then `redline stage deploy` records it, in the checkout that has the commit.
   */
  async function deploy(sha, edit) {
    const app = mkdtempSync(join(work, "build-"));
    for (const source of ["index.html", "vite.config.ts", "package.json", "package-lock.json", "src", "public"]) {
      cpSync(join(demo, source), join(app, source), { recursive: true });
    }
    const appSource = join(app, "src/App.tsx");
    const changed = edit(readFileSync(appSource, "utf8"));
    assert.notEqual(changed, readFileSync(appSource, "utf8"), "the new build changes the app");
    writeFileSync(appSource, changed);
    const addr = stage.addr;
    await stage.stop();
    step(`building and serving ${sha.slice(0, 7)}`);
    stage = await startStage({ addr, app, sha });
    step(`stage serves ${sha.slice(0, 7)}`);
    const cwd = process.cwd();
    process.chdir(join(work, "repo"));
    try {
      return await server.admin("stage", "deploy", "--stage", "main", "--sha", sha);
    } finally {
      process.chdir(cwd);
    }
  }

  /** The agent claims everything and marks `shortId` done with a new commit. */
  async function agentFixes(shortId, message) {
    step(`agent claims #${shortId}`);
    await redline(["next", "--claim", "--claimed-by", "agent-1", "--once"]);
    const sha = await commit(`${message}\n\nChange: #${shortId}`);
    await redline(["done", String(shortId), "--note", message]);
    return sha;
  }

  async function changeOf(title) {
    const { changes } = await server.rpc("listChanges", { projectId: server.projectId, includeDone: true, limit: 200 });
    return changes.find((c) => c.title === title);
  }

  /** The toolbar badge's text once it is `text`, or as it is after 5 s. */
  async function badgeBecomes(text) {
    let badge;
    for (let i = 0; i < 50 && badge !== text; i++) {
      badge = await browser.worker.evaluate(() => chrome.action.getBadgeText({}));
      if (badge !== text) await panel.waitForTimeout(100);
    }
    return badge;
  }

  const checkRow = (title) => panel.getByTestId("section-check").getByTestId("queue-row").filter({ hasText: title });

  /**
   * Opens the item from the Check section and runs Check on stage; resolves with the
   * check's section and the stage tab that shows build `sha` with the outline.
   */
  async function checkOnStage(title, sha) {
    await panel.bringToFront();
    await checkRow(title).locator(".row-main").click();
    const check = panel.getByTestId("check");
    await check.getByRole("button", { name: "Check on stage" }).click();
    step(`Check on stage: ${title}`);
    // The stage tab comes to the front, loaded fresh: the new build, outlined.
    let shownOn;
    for (let i = 0; i < 300 && !shownOn; i++) {
      for (const page of browser.context.pages()) {
        if (page === panel || !page.url().startsWith(stage.url)) continue;
        // A tab that is loading can leave an evaluate unanswered: asked again next round.
        const seen = await Promise.race([
          page.evaluate(() => [document.querySelector('meta[name="fabric-git-sha"]')?.content, !!document.getElementById("redline-show-host")]),
          new Promise((resolve) => setTimeout(resolve, 2_000, [])),
        ]).catch(() => []);
        if (seen[0] === sha && seen[1]) shownOn = page;
      }
      if (!shownOn) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(shownOn, "a stage tab shows the new build with the outline");
    step("the stage tab shows the new build, outlined");
    // The after-shot is of the tab in front: the panel, in the background meanwhile, comes
    // back once it shows the shot (or that one could not be taken).
    await check.getByTestId("check-located").waitFor({ timeout: 30_000 }).catch(async (error) => {
      throw new Error(`${error.message}\nthe check says: ${await check.innerText()}`);
    });
    await check.locator('[data-testid="after"] img, [data-testid="needs-toolbar-click"]').first().waitFor({ timeout: 30_000 });
    await panel.bringToFront();
    return { check, shownOn };
  }

  test("a fix the stage serves is checked there, before beside after, and Fixed verifies it", { timeout: TEST_TIMEOUT }, async () => {
    // Filed as a person would: a lasso around the Export button on the first build.
    const { page, overlay } = await openOverlay(browser, `${stage.url}/`);
    await drawLasso(page, await page.getByTestId("orders.export").boundingBox());
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.getByRole("textbox").fill("Export is cramped");
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });
    let filed;
    for (let i = 0; i < 100 && !filed; i++) {
      filed = await changeOf("Export is cramped");
      if (!filed) await page.waitForTimeout(100);
    }
    assert.ok(filed?.screenshotKey, "filed with a screenshot");
    step("filed from the overlay");
    // Esc closes the overlay. Its key-up is sent only once the overlay's frame is gone:
    // Chromium never acknowledges a key event sent to a frame being torn down, so a press
    // (down and up at once) can leave the driver waiting (as in foundation.test.mjs).
    await page.keyboard.down("Escape");
    await page.locator("#redline-overlay-host").waitFor({ state: "detached" });
    await page.keyboard.up("Escape");
    await server.rpc("releaseChanges", { stageId: server.stageId });

    const sha = await agentFixes(filed.shortId, "Give the Export button room");
    const deployed = await deploy(sha, (app) =>
      app.replace('<button type="button">{t("orders.export")}', '<button type="button" style={{ marginLeft: 24, background: "#dcfce7" }}>{t("orders.export")}'),
    );
    assert.deepEqual(deployed.live, [String(filed.shortId)]);
    step("deployed; the item is live");

    // Live and not yet checked: the Check section, above Done; the badge counts it.
    await panel.bringToFront();
    await checkRow("Export is cramped").waitFor({ timeout: 15_000 });
    const sections = await panel.locator(".queue-section").evaluateAll((all) => all.map((s) => s.dataset.testid));
    assert.ok(sections.indexOf("section-check") >= 0);
    if (sections.includes("section-done")) assert.ok(sections.indexOf("section-check") < sections.indexOf("section-done"));
    assert.equal(await badgeBecomes("1"), "1", "the toolbar badge counts the check");
    assert.match(await browser.worker.evaluate(() => chrome.action.getTitle({})), /1 fix waits to be checked/);

    const { check } = await checkOnStage("Export is cramped", sha);
    assert.deepEqual(await check.getByTestId("check-located").locator("li").allInnerTexts(), ["orders.export: found by test id"]);
    const noShot = check.getByTestId("needs-toolbar-click");
    if (await noShot.count()) assert.fail(`no after-shot: ${await noShot.textContent()}`);
    const after = check.getByTestId("after").locator("img");
    const before = check.getByTestId("before").locator("img");
    const [afterWidth, beforeWidth] = await Promise.all([after, before].map((img) =>
      // Bounded: an image whose source never answers would leave decode() waiting.
      img.evaluate((i) => Promise.race([i.decode(), new Promise((_, reject) => setTimeout(reject, 15_000, new Error(`${i.src} did not load`)))]).then(() => i.naturalWidth)),
    ));
    assert.ok(afterWidth > 50 && beforeWidth > 50, `both images load (${afterWidth}, ${beforeWidth})`);
    await check.getByText(`After, on ${sha.slice(0, 7)}`).waitFor();
    await assertAccessible(panel);
    await savePanelScreenshots(panel, "panel-check");

    step("before and after shown");
    await check.getByRole("button", { name: "Fixed" }).click();
    await panel.getByTestId("item-verified").getByText("fixed").waitFor();
    const { change, thread } = await server.rpc("getChange", { changeId: filed.changeId });
    assert.equal(change.status, "done");
    assert.ok(change.verifiedAt, "verified");
    assert.equal(change.verifiedBy, "dev");
    const verdict = thread.at(-1);
    assert.equal(verdict.type, "verdict");
    assert.equal(verdict.attachments.length, 1, "the after-shot goes with the verdict");
    await panel.keyboard.press("Escape");
    await panel.getByTestId("section-done").getByTestId("queue-row").filter({ hasText: "Export is cramped" }).getByText("checked by dev").waitFor();
    // The worker recounts the badge once the panel hears the verdict's event.
    assert.equal(await badgeBecomes(""), "", "nothing left to check");
  });

  test("Still wrong needs words, says what moved or was removed, and reopens the item for the agent", { timeout: TEST_TIMEOUT }, async () => {
    // Filed with the first build's screenshot and two elements, one of which the next
    // build removes.
    const stagePage = await browser.context.newPage();
    await stagePage.setViewportSize({ width: 1200, height: 700 });
    await stagePage.goto(`${stage.url}/`);
    const rect = async (testId) => stagePage.getByTestId(testId).boundingBox();
    const png = (await stagePage.screenshot()).toString("base64");
    const { screenshotKey } = await server.rpc("uploadShot", { projectId: server.projectId, contentType: "image/png", imageBase64: png });
    const { change: filed } = await server.rpc("createChange", {
      stageId: server.stageId,
      title: "Summary and export disagree",
      route: "/",
      viewport: { width: 1200, height: 700 },
      screenshotKey,
      capture: {
        stroke: [],
        devicePixelRatio: 1,
        elements: [
          { testId: "orders.export", tag: "button", rect: await rect("orders.export") },
          { testId: "orders.summary", tag: "p", rect: await rect("orders.summary") },
        ],
      },
    });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    const sha = await agentFixes(filed.shortId, "Drop the summary line");
    await deploy(sha, (app) => app.replace(/ *<p className="summary">[^\n]*\n/, ""));

    await panel.bringToFront();
    await checkRow("Summary and export disagree").waitFor({ timeout: 15_000 });
    const { check, shownOn } = await checkOnStage("Summary and export disagree", sha);
    step("after-shot asked for");
    // This tab never had a toolbar click and a host permission alone does not let Chrome
    // screenshot it: the panel says what to do, and doing it works.
    const noShot = check.getByTestId("needs-toolbar-click");
    await noShot.getByText("click on Redline\u2019s toolbar button").waitFor();
    await assertAccessible(panel);
    await shownOn.bringToFront();
    await browser.clickAction(shownOn);
    await shownOn.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
    await check.getByRole("button", { name: "Check again" }).click();
    await check.getByTestId("after").locator("img").waitFor({ timeout: 30_000 });
    await noShot.waitFor({ state: "detached" });
    await panel.bringToFront();
    assert.deepEqual(await check.getByTestId("check-located").locator("li").allInnerTexts(), [
      "orders.export: found by test id",
      `orders.summary: moved or removed on ${sha.slice(0, 7)}`,
    ]);

    // Circling the place again on the after-shot: the new circle goes with the verdict.
    step("after-shot taken after the toolbar click");
    await check.getByRole("button", { name: "Circle again" }).click();
    const shotBox = await check.getByTestId("after").boundingBox();
    const onShot = (fx, fy) => [shotBox.x + shotBox.width * fx, shotBox.y + shotBox.height * fy];
    await panel.mouse.move(...onShot(0.2, 0.5));
    await panel.mouse.down();
    for (let i = 1; i <= 24; i++) {
      const angle = Math.PI + (i / 24) * 2 * Math.PI;
      await panel.mouse.move(...onShot(0.5 + 0.3 * Math.cos(angle), 0.5 + 0.3 * Math.sin(angle)));
    }
    await panel.mouse.up();
    await check.getByRole("button", { name: "Done circling" }).click();
    await check.getByText("Your new circle goes with the verdict.").waitFor();
    assert.ok((await check.locator(".new-circle polygon").getAttribute("points")).split(" ").length >= 20, "the circle is shown");

    await check.getByRole("button", { name: "Still wrong" }).click();
    await check.getByRole("alert").getByText("Say what is still wrong").waitFor();
    assert.equal((await server.rpc("getChange", { changeId: filed.changeId })).change.status, "done", "nothing sent without words");

    // The agent that did the work waits for its items meanwhile.
    const waiting = spawn(process.env.REDLINE_BIN, ["next", "--claimed-by", "agent-1", "--timeout", "60"], {
      env: { ...agentEnv, RUST_LOG: "redline_agent=debug" },
      cwd: join(work, "repo"),
    });
    let [stdout, stderr] = ["", ""];
    waiting.stdout.on("data", (chunk) => (stdout += chunk));
    waiting.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = once(waiting, "exit");
    for (let i = 0; i < 100 && !stderr.includes("event stream connected"); i++) await panel.waitForTimeout(100);
    assert.ok(stderr.includes("event stream connected"), `redline next follows the events:\n${stderr}`);

    const words = "The total is gone too; keep the summary, fix its sum";
    await check.getByLabel("What is still wrong? (needed for Still wrong)").fill(words);
    await check.getByRole("button", { name: "Still wrong" }).click();
    await panel.getByTestId("item-status").getByText("open").waitFor();
    const { change, thread } = await server.rpc("getChange", { changeId: filed.changeId });
    assert.equal(change.status, "open");
    assert.equal(change.verifiedAt ?? null, null);
    const verdict = thread.at(-1);
    assert.equal(verdict.type, "verdict");
    assert.ok(verdict.body.includes(words), "the verdict carries the words");
    assert.equal(verdict.attachments.length, 1, "with the after-shot");
    // The after-shot that went has the new circle drawn in: red where the circle's lowest
    // point was drawn, below the outlined button (the button's middle is not red).
    const reds = await panel.evaluate(async (url) => {
      const bitmap = await createImageBitmap(await (await fetch(url, { signal: AbortSignal.timeout(15_000) })).blob());
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
      const context = canvas.getContext("2d");
      context.drawImage(bitmap, 0, 0);
      const red = (fx, fy) => {
        const [x, y] = [Math.round(bitmap.width * fx), Math.round(bitmap.height * fy)];
        const { data } = context.getImageData(x - 4, y - 4, 9, 9);
        for (let i = 0; i < data.length; i += 4) if (data[i] > 170 && data[i + 1] < 90 && data[i + 2] < 90) return true;
        return false;
      };
      return [red(0.5, 0.8), red(0.5, 0.5)];
    }, verdict.attachments[0].url);
    assert.deepEqual(reds, [true, false], "the circle is drawn into the after-shot");

    // The waiting agent wakes with the words and the after-shot, saved where it says.
    step("Still wrong sent");
    const [code] = await exited;
    assert.equal(code, 0, `redline next woke:\n${stdout}\n${stderr}`);
    assert.ok(stdout.startsWith("1 item sent back as still wrong, checked on the stage:\n"), stdout);
    assert.ok(stdout.includes(`Summary and export disagree`) && stdout.includes(words), stdout);
    const saved = stdout.split("\n").map((l) => l.match(/^ +after-screenshot: (.+)$/)?.[1]).find(Boolean);
    assert.ok(saved, `it says where the after-shot is:\n${stdout}`);
    const afterShot = readFileSync(saved);
    assert.equal(afterShot.subarray(8, 12).toString(), "WEBP", "the after-shot is the WebP the panel uploaded");
    assert.ok(afterShot.length > 1_000, `the after-shot has pixels (${afterShot.length} B)`);

    await panel.keyboard.press("Escape");
    await panel.getByTestId("section-waiting").getByTestId("queue-row").filter({ hasText: "Summary and export disagree" }).waitFor();
    // Open at once with no hold and no group: the agent's next claim takes it, and its
    // thread carries the words.
    const next = await redline(["next", "--claim", "--claimed-by", "agent-1", "--once"]);
    assert.ok(next.stdout.includes("Summary and export disagree"), `redline next claimed it:\n${next.stdout}`);
    const shown = await redline(["show", String(filed.shortId)]);
    assert.ok(shown.stdout.includes(words), `redline show prints the words:\n${shown.stdout}`);
    assert.match(shown.stdout, /\(verdict\)/);
    assert.deepEqual(errors, []);
  });
});
