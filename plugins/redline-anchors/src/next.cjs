// Next.js: `withRedlineAnchors(nextConfig)` adds the SWC plugin (../swc) to
// `experimental.swcPlugins` when anchors are on, so SWC stays the compiler; off, it
// returns the config untouched. `babelConfig()` is for apps that compile with Babel.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const babelPlugin = require("./babel.cjs");
const { isEnabled, repoRoot, gitSha } = require("./build-info.cjs");

/**
 * The Next.js releases whose SWC loads the plugin (built on `swc_ecma_ast` 29, Next.js
 * 16.4's): an older host cannot read a newer tree, and a newer host's tree has not
 * always been readable by an older plugin (16.4.6's was not by one built for 16.1), so
 * a minor release is listed once a build with it has passed: 16.4.6 in the tests,
 * 16.5.0 by hand.
 */
const SUPPORTED_NEXT = { minors: ["16.4", "16.5"], tested: "16.4.6 and 16.5.0" };

/** Throws, naming `version` and the supported ones, unless the plugin loads in that Next.js. */
function assertSupportedNext(version) {
  const minor = /^(\d+\.\d+)\.\d+/.exec(version ?? "")?.[1];
  if (SUPPORTED_NEXT.minors.includes(minor)) return;
  throw new Error(
    `redline-anchors: Next.js ${version} is not supported by its SWC plugin; supported: ` +
      `${SUPPORTED_NEXT.minors.map((m) => `${m}.x`).join(", ")} (tested with ${SUPPORTED_NEXT.tested}). ` +
      "Build without REDLINE_ANCHORS, or compile with Babel: babelConfig() in babel.config.js.",
  );
}

/** Throws, saying how to build it, when the package holds no `.wasm` (a checkout that was not built). */
function assertBuilt() {
  const wasm = path.join(__dirname, "../swc/redline_anchors_swc.wasm");
  if (!fs.existsSync(wasm)) {
    throw new Error(`redline-anchors: the SWC plugin is not built (${wasm}); build it in Redline's checkout with \`cargo xtask anchors-swc\`, then install the package again.`);
  }
}

/** A module of the Next.js that `dir` builds with. */
const nextModule = (dir, name) => require(require.resolve(`next/${name}`, { paths: [dir] }));

/**
 * The folder Turbopack names files relative to (it hands the plugin `app/page.jsx`, or
 * `apps/web/app/page.jsx` in a monorepo), found as Next.js finds it: the config's, else
 * the workspace's root.
 */
function turbopackRoot(config, dir) {
  const given = config.outputFileTracingRoot ?? config.turbopack?.root ?? process.env.NEXT_PRIVATE_OUTPUT_TRACE_ROOT;
  return given ? path.resolve(dir, given) : nextModule(dir, "dist/lib/find-root").findRootDirAndLockFiles(dir).rootDir;
}

/**
 * `module.exports = withRedlineAnchors(nextConfig, { enabled, root, sha, meta })`: with
 * anchors on (REDLINE_ANCHORS=1 or `enabled: true`) the SWC plugin stamps the app's JSX
 * and writes the commit into its JSX `<head>`; off, `nextConfig` itself is returned.
 */
function withRedlineAnchors(nextConfig = {}, options = {}) {
  if (!isEnabled(options)) return nextConfig;
  const dir = process.cwd();
  assertSupportedNext(nextModule(dir, "package.json").version);
  assertBuilt();
  const sha = options.meta === false ? undefined : gitSha(options, dir);
  const add = (config) => {
    const plugin = ["redline-anchors/swc", { root: repoRoot(options, dir), base: turbopackRoot(config, dir), sha }];
    return { ...config, experimental: { ...config.experimental, swcPlugins: [...(config.experimental?.swcPlugins ?? []), plugin] } };
  };
  // A config may be a function of the phase (next.config.js's other form).
  return typeof nextConfig === "function" ? async (...args) => add(await nextConfig(...args)) : add(nextConfig);
}

/** A Babel config for Next.js: `module.exports = require("redline-anchors/next").babelConfig()`. */
function babelConfig(options = {}) {
  return { presets: ["next/babel"], plugins: [[babelPlugin, options]] };
}

module.exports = { withRedlineAnchors, babelConfig, assertSupportedNext, SUPPORTED_NEXT };
