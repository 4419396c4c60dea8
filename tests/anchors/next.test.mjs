// The plugin in a real Next.js build (App Router, Turbopack, the Babel config in
// next-app/babel.config.js): built with REDLINE_ANCHORS=1 the exported HTML carries
// the anchors, the test ids and the commit; built without, none of them.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { appDir, buildEnv, gitHead, lineOf, textOf, timed } from "./build.mjs";

const app = appDir("next-app");

function nextBuild(env) {
  rmSync(join(app, ".next"), { recursive: true, force: true });
  rmSync(join(app, "out"), { recursive: true, force: true });
  return timed(join(app, "node_modules/.bin/next"), ["build"], { cwd: app, env: buildEnv(env) });
}

describe("redline-anchors in a Next.js build", () => {
  test("on: the exported page carries anchors, test ids and the commit", (t) => {
    const ms = nextBuild({ REDLINE_ANCHORS: "1" });
    t.diagnostic(`next build with the plugin on: ${ms.toFixed(0)} ms`);
    const html = readFileSync(join(app, "out/index.html"), "utf8");
    const toolbar = "tests/anchors/next-app/app/toolbar.jsx";
    const page = "tests/anchors/next-app/app/page.jsx";
    assert.ok(
      html.includes(`<button data-fabric-src="${toolbar}:${lineOf(toolbar, "<button")}" data-testid="orders.export" type="button">`),
      "the client component's button: its line and its i18n key",
    );
    assert.ok(html.includes(`<div data-fabric-src="${toolbar}:${lineOf(toolbar, "<div")}" data-testid="order-toolbar"`));
    assert.ok(html.includes(`<main data-fabric-src="${page}:${lineOf(page, "<main")}" data-testid="orders-page">`));
    assert.ok(html.includes('<h1 data-testid="orders.title">'), "a heading gets its key, but no anchor");
    assert.ok(html.includes(`<meta name="fabric-git-sha" content="${gitHead()}"/>`));
  });

  test("off: the same build has none of them", (t) => {
    const ms = nextBuild({});
    t.diagnostic(`next build with the plugin off: ${ms.toFixed(0)} ms`);
    assert.doesNotMatch(textOf(join(app, "out")), /data-fabric-src|fabric-git-sha|data-testid/);
    rmSync(join(app, "out"), { recursive: true, force: true });
    rmSync(join(app, ".next"), { recursive: true, force: true });
  });
});
