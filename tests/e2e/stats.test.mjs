// The panel's views of #26 against the real server: the Stats view (getStats; its
// pictures in docs/using.md with REDLINE_PANEL_SCREENSHOTS=docs), the
// project's webhooks in Settings for an admin (listWebhooks) and nothing for anyone
// else, and a done item's commit and pull request links. Fabric's server has no
// `getStats` and answers 404: the panel's answer to that is tested by answering the
// panel's `getStats` as Fabric does.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertAccessible, launchBrowser, openConnectedPanel, prepareServer, savePanelScreenshots } from "./harness.mjs";

describe("stats, webhooks and fix links in the panel", () => {
  let server, browser, panel, errors;

  before(async () => {
    server = await prepareServer({ stageUrl: "http://127.0.0.1:9" });
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    errors = [];
    panel = await openConnectedPanel(browser, server, { viewport: { width: 420, height: 900 }, errors });
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
  });

  /** Files an item as the panel's person and ends its hold. */
  async function file(title) {
    const { change } = await server.rpc("createChange", { stageId: server.stageId, title, route: "/" });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    return change;
  }

  /** Claims and completes an item as `agent`, with `links` (commitUrl, pullRequestUrl). */
  async function complete(change, agent, links = {}) {
    await server.rpc("claimChanges", { projectId: server.projectId, changeIds: [change.changeId], claimedBy: agent });
    const headCommit = "a91c4e2f00d1e5c0ffee00000000000000000000";
    return (await server.rpc("completeChange", { changeId: change.changeId, branch: "main", headCommit, authorName: agent, ...links })).change;
  }

  /** Shows `view` ("Stats" or "Settings") unless it is shown. */
  async function show(view) {
    const button = panel.getByRole("button", { name: view, exact: true });
    if ((await button.getAttribute("aria-pressed")) !== "true") await button.click();
  }

  /** Back to the queue. */
  async function queue() {
    for (const view of ["Stats", "Settings"]) {
      const button = panel.getByRole("button", { name: view, exact: true });
      if ((await button.getAttribute("aria-pressed")) === "true") await button.click();
    }
  }

  test("a server without getStats (Fabric's): the Stats view says stats are not available", async () => {
    const asFabric = (route) =>
      route.fulfill({ status: 404, contentType: "application/json", body: JSON.stringify({ error: "no RPC named getStats" }) });
    await panel.route(`${server.url}/rpc/getStats`, asFabric);
    try {
      await show("Stats");
      await panel.getByTestId("stats-unavailable").getByText("Stats are not available from this server.").waitFor();
      await assertAccessible(panel, "the Stats view");
      await queue();
    } finally {
      await panel.unroute(`${server.url}/rpc/getStats`, asFabric);
    }
  });

  test("the Stats view shows the totals and a table per agent and per filer", async () => {
    const checked = await file("Stats: totals are wrong");
    await complete(checked, "agent-1");
    await server.rpc("verifyChange", { changeId: checked.changeId, verdict: "fixed" });
    await complete(await file("Stats: the p90 is off"), "agent-2");
    await file("Stats: nobody took this one");
    const { total } = await server.rpc("getStats", { projectId: server.projectId });
    assert.equal(total.filed, 3);
    assert.equal(total.done, 2);
    assert.equal(total.verified, 1);

    await show("Stats");
    const totals = panel.getByTestId("stats-totals");
    await totals.waitFor();
    const pairs = await totals.evaluate((dl) =>
      Object.fromEntries([...dl.querySelectorAll("dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])),
    );
    assert.equal(pairs.Filed, "3");
    assert.equal(pairs.Done, "2");
    assert.equal(pairs.Verified, "1");
    assert.match(pairs["Time to done"], /^median \d+\u00a0(s|min|h).*, p90 \d+/);
    const perAgent = panel.getByRole("table", { name: "Per agent" });
    assert.deepEqual((await perAgent.getByRole("rowheader").allTextContents()).sort(), ["agent-1", "agent-2"]);
    const perFiler = panel.getByRole("table", { name: "Per filer" });
    assert.deepEqual(await perFiler.getByRole("rowheader").allTextContents(), ["dev"]);
    assert.equal(await perFiler.getByRole("row").nth(1).getByRole("cell").first().textContent(), "3", "dev filed all three");
    // The tables scroll inside their region; the panel does not scroll sideways.
    const { scrollWidth, clientWidth } = await panel.evaluate(() => {
      const { scrollWidth, clientWidth } = document.scrollingElement;
      return { scrollWidth, clientWidth };
    });
    assert.ok(scrollWidth <= clientWidth, `the panel scrolls sideways: ${scrollWidth} > ${clientWidth}`);
    await assertAccessible(panel, "the Stats view");
    await savePanelScreenshots(panel, "panel-stats");
    await queue();
  });

  test("a token without the admin scope sees no webhooks in Settings", async () => {
    await show("Settings");
    await panel.getByRole("heading", { name: "Notifications" }).waitFor();
    assert.equal(await panel.getByRole("heading", { name: "Webhooks" }).count(), 0);
    await queue();
  });

  test("an admin sees the project's webhooks in Settings: target, events, format and deliveries", async () => {
    const { token: adminToken } = await server.admin(
      "token", "create", "--project", "dev", "--name", "admin",
      "--scope", "changes:project:read,changes:project:file,changes:project:admin",
    );
    // No name resolves here, so the receiver is this machine (nothing listens on port 9).
    await server.admin(
      "webhook", "add", "--project", "dev", "http://127.0.0.1:9/services/T0/B0/secret",
      "--events", "asked,done", "--format", "slack", "--allow-private-webhooks",
    );
    await show("Settings");
    await panel.locator("#token").fill(adminToken);
    await panel.getByRole("button", { name: "Save" }).click();
    await panel.getByTestId("connection-status").getByText("Connected as admin").waitFor();
    await show("Settings");
    const webhook = panel.getByTestId("webhook");
    await webhook.waitFor();
    const text = await webhook.textContent();
    assert.match(text, /http:\/\/127\.0\.0\.1:9/);
    assert.ok(!text.includes("secret"), "never the URL's path");
    assert.match(text, /slack/);
    assert.match(text, /Events: asked, done/);
    await webhook.getByTestId("webhook-deliveries").getByText(/^\d+ pending · \d+ failed$/).waitFor();
    await assertAccessible(panel, "the settings with webhooks");
    await queue();
  });

  test("a done item links its commit and pull request, opening in a new tab", async () => {
    const links = { commitUrl: "https://github.com/o/r/commit/a91c4e2", pullRequestUrl: "https://github.com/o/r/pull/7" };
    const done = await complete(await file("Links: the fix is somewhere"), "agent-2", links);
    assert.equal(done.commitUrl, links.commitUrl, "completeChange keeps the commit's link");
    await panel.getByTestId("queue-row").filter({ hasText: "Links: the fix is somewhere" }).locator(".row-main").click();
    const build = panel.getByTestId("item-build");
    await build.getByText("main @ a91c4e2").waitFor();
    const shown = await build.getByTestId("fix-link").evaluateAll((all) =>
      all.map((a) => ({ text: a.textContent, href: a.href, target: a.target, rel: a.rel })),
    );
    assert.deepEqual(shown, [
      { text: "commit", href: links.commitUrl, target: "_blank", rel: "noopener noreferrer" },
      { text: "pull request", href: links.pullRequestUrl, target: "_blank", rel: "noopener noreferrer" },
    ]);
    await assertAccessible(panel, "a done item with its links");
    await panel.keyboard.press("Escape");
    // A server build without getStats answers the Stats view 404, which Chromium logs.
    assert.deepEqual(errors.filter((e) => !e.includes("/rpc/getStats")), []);
  });
});
