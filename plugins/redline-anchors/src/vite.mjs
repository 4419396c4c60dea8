// The Vite plugin: runs the Babel plugin over the app's JSX/TSX, and the template
// transforms over its .vue and .svelte components, before the framework's own compiler
// (only attributes are added), and writes the commit into index.html. Off by default: a disabled plugin has no hooks at all, so
// the build is byte-identical to one without it.
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { insertAttributes } from "./markup.mjs";
import { insertionsOfSvelte } from "./svelte.mjs";
import { insertionsOfVue } from "./vue.mjs";

const require = createRequire(import.meta.url);
const babelPlugin = require("./babel.cjs");
const { isEnabled, gitSha, repoRoot, anchorPath } = require("./build-info.cjs");

const SOURCE = /\.([cm]?[jt]sx|vue|svelte)$/;
/** Single-file components by extension: what is inserted where, and the compiler it parses with (the app's). */
const TEMPLATES = {
  ".vue": { insertions: insertionsOfVue, compiler: "vue/compiler-sfc" },
  ".svelte": { insertions: insertionsOfSvelte, compiler: "svelte/compiler" },
};

/**
 * `redlineAnchors({ enabled, root, sha, include, meta, jsx })`; every option is optional.
 * `enabled` defaults to REDLINE_ANCHORS=1; `include` is a RegExp of files to stamp
 * (default: .jsx, .tsx, .vue and .svelte outside node_modules); `jsx: false` leaves JSX
 * to the SWC plugin (`swcPlugins()`, for `@vitejs/plugin-react-swc`).
 */
export default function redlineAnchors(options = {}) {
  if (!isEnabled(options)) return { name: "redline-anchors" };
  const include = options.include ?? SOURCE;
  let root;
  let sha;
  let appRoot;
  const compilers = new Map();
  /** The app's own copy of a dependency (Babel, Vue's or Svelte's compiler, magic-string), loaded once. */
  const load = (name) => {
    if (!compilers.has(name)) compilers.set(name, loadPeer(appRoot, name));
    return compilers.get(name);
  };
  return {
    name: "redline-anchors",
    enforce: "pre",
    configResolved(config) {
      appRoot = config.root;
      root = repoRoot(options, config.root);
      sha = options.meta === false ? undefined : gitSha(options, config.root);
    },
    async transform(code, id) {
      const [file, query] = id.split("?");
      if (!include.test(file) || /[\\/]node_modules[\\/]/.test(file) || !code.includes("<")) return null;
      const template = TEMPLATES[path.extname(file)];
      if (template) {
        // A query is one block of the component (`?vue&type=style`), served from the compiled whole.
        const at = anchorPath(file, root);
        if (query !== undefined || !at) return null;
        const parse = exported(await load(template.compiler), "parse");
        const MagicString = exported(await load("magic-string"), "default");
        return insertAttributes(MagicString, code, { file, anchorPath: at }, template.insertions(code, { file, parse }));
      }
      if (options.jsx === false) return null;
      const babel = await load("@babel/core");
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

/**
 * The SWC plugin for `@vitejs/plugin-react-swc`: `react({ plugins: swcPlugins() })`, with
 * `redlineAnchors({ jsx: false })` for the meta tag. Undefined when anchors are off, not
 * an empty list: given any list, plugin-react-swc compiles the build with SWC rather than
 * Oxc, and the output would differ from a build without the plugin. Options: `enabled`,
 * `root`, `sha`, `meta`.
 */
export function swcPlugins(options = {}) {
  if (!isEnabled(options)) return undefined;
  const cwd = process.cwd();
  const sha = options.meta === false ? undefined : gitSha(options, cwd);
  return [[SWC_PLUGIN, { root: repoRoot(options, cwd), base: cwd, sha }]];
}

/** The built SWC plugin, by its path: @swc/core loads a file from anywhere. */
const SWC_PLUGIN = fileURLToPath(new URL("../swc/redline_anchors_swc.wasm", import.meta.url));

/**
 * The app's own copy of `name`, else the one beside this package. Vue and Svelte apps
 * have magic-string too (their compilers use it): installed from a checkout, this
 * package's own dependencies are only there after an `npm install` in its folder.
 */
async function loadPeer(appRoot, name) {
  try {
    const resolved = createRequire(path.join(appRoot, "package.json")).resolve(name);
    return await import(pathToFileURL(resolved).href);
  } catch {
    return import(name);
  }
}

/** An export of a module, also when it is CommonJS (imported, its exports are on `default`). */
const exported = (module, name) => module[name] ?? module.default?.[name];

export { redlineAnchors };
