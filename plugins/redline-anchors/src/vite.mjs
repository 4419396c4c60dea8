// The Vite plugin: runs the Babel plugin over the app's JSX/TSX before Vite's own
// compiler (JSX and types are kept, only attributes are added), and writes the
// commit into index.html. Off by default: a disabled plugin has no hooks at all, so
// the build is byte-identical to one without it.
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const babelPlugin = require("./babel.cjs");
const { isEnabled, gitSha, repoRoot } = require("./build-info.cjs");

const SOURCE = /\.[cm]?[jt]sx$/;

/**
 * `redlineAnchors({ enabled, root, sha, include, meta })`; every option is optional.
 * `enabled` defaults to REDLINE_ANCHORS=1; `include` is a RegExp of files to stamp
 * (default: .jsx and .tsx outside node_modules).
 */
export default function redlineAnchors(options = {}) {
  if (!isEnabled(options)) return { name: "redline-anchors" };
  const include = options.include ?? SOURCE;
  let root;
  let sha;
  let babel;
  let appRoot;
  return {
    name: "redline-anchors",
    enforce: "pre",
    configResolved(config) {
      appRoot = config.root;
      root = repoRoot(options, config.root);
      sha = options.meta === false ? undefined : gitSha(options, config.root);
    },
    async transform(code, id) {
      const file = id.split("?")[0];
      if (!include.test(file) || /[\\/]node_modules[\\/]/.test(file) || !code.includes("<")) return null;
      babel ??= await loadBabel(appRoot);
      const typescript = /\.[cm]?tsx$/.test(file);
      const result = await babel.transformAsync(code, {
        filename: file,
        cwd: path.dirname(file),
        babelrc: false,
        configFile: false,
        sourceMaps: true,
        parserOpts: { plugins: typescript ? ["jsx", "typescript"] : ["jsx"] },
        plugins: [[babelPlugin, { ...options, enabled: true, root, meta: options.meta, sha }]],
      });
      return result && { code: result.code, map: result.map };
    },
    transformIndexHtml(html) {
      if (!sha || /<meta[^>]+name=["']fabric-git-sha["']/i.test(html)) return html;
      return [{ tag: "meta", attrs: { name: "fabric-git-sha", content: sha }, injectTo: "head-prepend" }];
    },
  };
}

/** The app's own @babel/core (a peer dependency), else the one beside this package. */
async function loadBabel(appRoot) {
  try {
    const resolved = createRequire(path.join(appRoot, "package.json")).resolve("@babel/core");
    return await import(pathToFileURL(resolved).href);
  } catch {
    return import("@babel/core");
  }
}

export { redlineAnchors };
