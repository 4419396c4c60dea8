// What every entry point needs to know about the build: whether anchors are on, the
// repository root that anchors are relative to, and the commit being built.
"use strict";

const { execFileSync } = require("node:child_process");
const path = require("node:path");

/** Environment variables a CI sets to the commit it builds, checked in this order. */
const SHA_VARIABLES = [
  "REDLINE_GIT_SHA",
  "FABRIC_GIT_SHA",
  "GITHUB_SHA",
  "CI_COMMIT_SHA",
  "VERCEL_GIT_COMMIT_SHA",
  "CF_PAGES_COMMIT_SHA",
  "COMMIT_REF",
  "GIT_COMMIT",
];

/** On only when asked: `enabled: true`, or REDLINE_ANCHORS set to 1, true, yes or on. */
function isEnabled(options = {}) {
  if (typeof options.enabled === "boolean") return options.enabled;
  return /^(1|true|yes|on)$/i.test(process.env.REDLINE_ANCHORS ?? "");
}

function git(args, cwd) {
  try {
    return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const roots = new Map();
/** The folder anchors are relative to: `root`, REDLINE_ANCHORS_ROOT, the git checkout's top, or `cwd`. */
function repoRoot(options = {}, cwd = process.cwd()) {
  const given = options.root ?? process.env.REDLINE_ANCHORS_ROOT;
  if (given) return path.resolve(cwd, given);
  if (!roots.has(cwd)) roots.set(cwd, git(["rev-parse", "--show-toplevel"], cwd) ?? cwd);
  return roots.get(cwd);
}

const heads = new Map();
/** The commit being built: `sha`, a CI variable, or `git rev-parse HEAD`; undefined if none. */
function gitSha(options = {}, cwd = process.cwd()) {
  if (options.sha) return options.sha;
  for (const name of SHA_VARIABLES) {
    if (process.env[name]) return process.env[name].trim();
  }
  if (!heads.has(cwd)) heads.set(cwd, git(["rev-parse", "HEAD"], cwd));
  return heads.get(cwd);
}

/** A file's anchor path: relative to `root`, forward slashes; undefined outside it. */
function anchorPath(file, root) {
  const relative = path.relative(root, file);
  if (!relative || relative.startsWith("..") || path.isAbsolute(relative)) return undefined;
  return relative.split(path.sep).join("/");
}

module.exports = { SHA_VARIABLES, isEnabled, repoRoot, gitSha, anchorPath };
