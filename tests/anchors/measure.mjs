// The plugin's costs, measured per stack (React, Vue, Svelte on Vite; Next.js with the
// SWC and the Babel plugin, in measure-next.mjs): `node tests/anchors/measure.mjs [rounds]
// [next]` (`next`: only Next.js).
// 1. Build time of each stack's test app with the plugin on and off, alternating, same run.
// 2. Added bytes per 1,000 stamped elements: a generated component with 1,000 buttons
//    (each gets an anchor and its i18n key) built on and off; the difference of the JS,
//    raw and gzipped, and what the attributes add to the page's DOM.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { appDir, buildEnv, filesOf, timed, viteBuild } from "./build.mjs";
import { nextBuildTimes, nextBytesPerThousand } from "./measure-next.mjs";

const rounds = Number(process.argv[2] ?? 5);
const out = mkdtempSync(join(tmpdir(), "redline-anchors-measure-"));
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const button = (i, written, handler, call) =>
  `    <button type="button" ${handler}${written ? ` data-testid="b${i}"` : ""}>${call(`orders.action${i}`)}</button>`;
const buttons = (written, handler, call) => Array.from({ length: 1000 }, (_, i) => button(i, written, handler, call)).join("\n");

/**
 * Each stack's test app, and the 1,000-button component in its idiom: `files(written)`
 * gives the sources (by path under src/), `firstLine` the first button's line.
 */
const STACKS = [
  {
    stack: "React",
    app: "vite-app",
    config: "vite.config.ts",
    entry: "main.tsx",
    component: "Big.tsx",
    firstLine: 6,
    files: (written) => ({
      "t.ts": "export const t = (key: string) => key;\n",
      "main.tsx": 'import { createRoot } from "react-dom/client";\nimport { Big } from "./Big";\ncreateRoot(document.getElementById("root")!).render(<Big />);\n',
      "Big.tsx": `import { t } from "./t";\nconst go = () => {};\nexport function Big() {\n  return (\n    <section>\n${buttons(written, "onClick={go}", (key) => `{t("${key}")}`)}\n    </section>\n  );\n}\n`,
    }),
  },
  {
    stack: "Vue",
    app: "vue-app",
    config: "vite.config.ts",
    entry: "main.ts",
    component: "Big.vue",
    firstLine: 7,
    files: (written) => ({
      "main.ts": 'import { createApp } from "vue";\nimport Big from "./Big.vue";\ncreateApp(Big).mount("#root");\n',
      "Big.vue": `<script setup lang="ts">\nconst go = () => {};\nconst $t = (key: string) => key;\n</script>\n<template>\n  <section>\n${buttons(written, '@click="go"', (key) => `{{ $t("${key}") }}`)}\n  </section>\n</template>\n`,
    }),
  },
  {
    stack: "Svelte",
    app: "svelte-app",
    config: "vite.config.js",
    entry: "main.js",
    component: "Big.svelte",
    firstLine: 6,
    files: (written) => ({
      "t.js": 'import { readable } from "svelte/store";\nexport const _ = readable((key) => key);\n',
      "main.js": 'import { mount } from "svelte";\nimport Big from "./Big.svelte";\nmount(Big, { target: document.getElementById("root") });\n',
      "Big.svelte": `<script>\n  import { _ } from "./t.js";\n  const go = () => {};\n</script>\n<section>\n${buttons(written, "onclick={go}", (key) => `{$_("${key}")}`)}\n</section>\n`,
    }),
  },
];

function buildTimes({ stack, app }) {
  const ms = { on: [], off: [] };
  viteBuild(join(out, "warm"), {}, app); // the first build of a run warms caches; not counted
  for (let i = 0; i < rounds; i++) {
    ms.off.push(viteBuild(join(out, "off"), {}, app));
    ms.on.push(viteBuild(join(out, "on"), { REDLINE_ANCHORS: "1" }, app));
  }
  const list = (l) => l.map((m) => m.toFixed(0)).join(", ");
  console.log(`${stack} test app, ${rounds} builds each, alternating: on median ${median(ms.on).toFixed(0)} ms (${list(ms.on)}), off median ${median(ms.off).toFixed(0)} ms (${list(ms.off)})`);
}

/** 1,000 buttons, in a throw-away folder inside the app (so its packages resolve). */
function bytesPerThousand({ stack, app, config, entry, component, firstLine, files }) {
  const dir = appDir(app);
  const big = join(dir, ".measure");
  rmSync(big, { recursive: true, force: true });
  mkdirSync(join(big, "src"), { recursive: true });
  writeFileSync(join(big, "index.html"), `<!doctype html><html><head></head><body><div id="root"></div><script type="module" src="/src/${entry}"></script></body></html>`);
  const build = (name, env) =>
    timed(join(dir, "node_modules/.bin/vite"), ["build", big, "--config", join(dir, config), "--outDir", join(out, name), "--emptyOutDir", "--logLevel", "warn"], { cwd: dir, env: buildEnv(env) });
  const js = (name) => Buffer.concat([...filesOf(join(out, name))].filter(([f]) => f.endsWith(".js")).map(([, b]) => b));
  const path = `tests/anchors/${app}/.measure/src/${component}`;
  for (const [what, written, attributes] of [
    ["anchor and i18n test id", false, (i) => ` data-fabric-src="${path}:${i + firstLine}" data-testid="orders.action${i}"`],
    ["anchor only (test ids written by hand)", true, (i) => ` data-fabric-src="${path}:${i + firstLine}"`],
  ]) {
    for (const [name, text] of Object.entries(files(written))) writeFileSync(join(big, "src", name), text);
    build("big-off", {});
    build("big-on", { REDLINE_ANCHORS: "1" });
    const [on, off] = [js("big-on"), js("big-off")];
    const dom = Array.from({ length: 1000 }, (_, i) => attributes(i).length).reduce((a, b) => a + b, 0);
    console.log(`${stack}, 1,000 buttons, ${what}: JS +${on.length - off.length} B raw, +${gzipSync(on).length - gzipSync(off).length} B gzipped; the DOM +${dom} B as serialized HTML`);
  }
  rmSync(big, { recursive: true, force: true });
}

const viteStacks = process.argv[3] === "next" ? [] : STACKS;
for (const stack of viteStacks) buildTimes(stack);
nextBuildTimes(rounds, out);
for (const stack of viteStacks) bytesPerThousand(stack);
nextBytesPerThousand(out);
rmSync(out, { recursive: true, force: true });
