// What the entry points share: on or off, the root, the commit, anchor paths.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { test } from "node:test";

const require = createRequire(import.meta.url);
const { SHA_VARIABLES, anchorPath, gitSha, isEnabled, repoRoot } = require("../src/build-info.cjs");

/** Runs `body` with the environment variables in `vars` set (undefined: unset), then restores them. */
function withEnv(vars, body) {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) v === undefined ? delete process.env[k] : (process.env[k] = v);
  try {
    return body();
  } finally {
    for (const [k, v] of Object.entries(saved)) v === undefined ? delete process.env[k] : (process.env[k] = v);
  }
}

const noShaVariables = Object.fromEntries(SHA_VARIABLES.map((name) => [name, undefined]));

test("enabled only when asked", () => {
  withEnv({ REDLINE_ANCHORS: undefined }, () => assert.equal(isEnabled(), false));
  for (const on of ["1", "true", "YES", "on"]) withEnv({ REDLINE_ANCHORS: on }, () => assert.equal(isEnabled(), true));
  for (const off of ["0", "false", ""]) withEnv({ REDLINE_ANCHORS: off }, () => assert.equal(isEnabled(), false));
  withEnv({ REDLINE_ANCHORS: "1" }, () => assert.equal(isEnabled({ enabled: false }), false, "the option wins"));
});

test("the commit: the option, then a CI variable, then git", () => {
  const here = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim();
  withEnv(noShaVariables, () => assert.equal(gitSha(), here));
  withEnv({ ...noShaVariables, GITHUB_SHA: "ci-sha" }, () => assert.equal(gitSha(), "ci-sha"));
  withEnv({ ...noShaVariables, GITHUB_SHA: "ci-sha", REDLINE_GIT_SHA: "ours" }, () => assert.equal(gitSha(), "ours"));
  withEnv({ GITHUB_SHA: "ci-sha" }, () => assert.equal(gitSha({ sha: "given" }), "given"));
});

test("anchor paths are relative to the repository root, with forward slashes", () => {
  const top = execFileSync("git", ["rev-parse", "--show-toplevel"], { encoding: "utf8" }).trim();
  withEnv({ REDLINE_ANCHORS_ROOT: undefined }, () => assert.equal(repoRoot(), top));
  assert.equal(repoRoot({ root: "/srv/app" }), "/srv/app");
  assert.equal(anchorPath("/srv/app/src/routes/a.tsx", "/srv/app"), "src/routes/a.tsx");
  assert.equal(anchorPath("/srv/other/a.tsx", "/srv/app"), undefined);
});
