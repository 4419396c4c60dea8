// The plugin's costs, measured: `node tests/anchors/measure.mjs [rounds]`.
// 1. Build time of the Vite test app with the plugin on and off, alternating, same run.
// 2. Added bytes per 1,000 stamped elements: a generated component with 1,000 buttons
//    (each gets an anchor and its i18n key) built on and off; the difference of the JS,
//    raw and gzipped, and what the attributes add to the page's DOM.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { appDir, buildEnv, filesOf, timed, viteBuild } from "./build.mjs";

const rounds = Number(process.argv[2] ?? 5);
const out = mkdtempSync(join(tmpdir(), "redline-anchors-measure-"));
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

const ms = { on: [], off: [] };
viteBuild(join(out, "warm")); // the first build of a run warms caches; not counted
for (let i = 0; i < rounds; i++) {
  ms.off.push(viteBuild(join(out, "off")));
  ms.on.push(viteBuild(join(out, "on"), { REDLINE_ANCHORS: "1" }));
}
console.log(`test app, ${rounds} builds each, alternating: on median ${median(ms.on).toFixed(0)} ms (${ms.on.map((m) => m.toFixed(0)).join(", ")}), off median ${median(ms.off).toFixed(0)} ms (${ms.off.map((m) => m.toFixed(0)).join(", ")})`);

// 1,000 elements, in a throw-away folder inside the app (so its packages resolve).
const app = appDir("vite-app");
const big = join(app, ".measure");
rmSync(big, { recursive: true, force: true });
mkdirSync(join(big, "src"), { recursive: true });
writeFileSync(join(big, "index.html"), '<!doctype html><html><head></head><body><div id="root"></div><script type="module" src="/src/main.tsx"></script></body></html>');
const write = (written) => {
  const buttons = Array.from({ length: 1000 }, (_, i) => `      <button type="button" onClick={go}${written ? ` data-testid="b${i}"` : ""}>{t("orders.action${i}")}</button>`).join("\n");
  writeFileSync(join(big, "src/Big.tsx"), `import { t } from "./t";\nconst go = () => {};\nexport function Big() {\n  return (\n    <section>\n${buttons}\n    </section>\n  );\n}\n`);
};
writeFileSync(join(big, "src/t.ts"), "export const t = (key: string) => key;\n");
writeFileSync(join(big, "src/main.tsx"), 'import { createRoot } from "react-dom/client";\nimport { Big } from "./Big";\ncreateRoot(document.getElementById("root")!).render(<Big />);\n');
const build = (name, env) =>
  timed(join(app, "node_modules/.bin/vite"), ["build", big, "--config", join(app, "vite.config.ts"), "--outDir", join(out, name), "--emptyOutDir", "--logLevel", "warn"], { cwd: app, env: buildEnv(env) });
const js = (name) => Buffer.concat([...filesOf(join(out, name))].filter(([f]) => f.endsWith(".js")).map(([, b]) => b));
const path = "tests/anchors/vite-app/.measure/src/Big.tsx";
for (const [what, written, attributes] of [
  ["anchor and i18n test id", false, (i) => ` data-fabric-src="${path}:${i + 6}" data-testid="orders.action${i}"`],
  ["anchor only (test ids written by hand)", true, (i) => ` data-fabric-src="${path}:${i + 6}"`],
]) {
  write(written);
  build("big-off", {});
  build("big-on", { REDLINE_ANCHORS: "1" });
  const [on, off] = [js("big-on"), js("big-off")];
  const dom = Array.from({ length: 1000 }, (_, i) => attributes(i).length).reduce((a, b) => a + b, 0);
  console.log(`1,000 buttons, ${what}: JS +${on.length - off.length} B raw, +${gzipSync(on).length - gzipSync(off).length} B gzipped; the DOM +${dom} B as serialized HTML`);
}
rmSync(big, { recursive: true, force: true });
rmSync(out, { recursive: true, force: true });
