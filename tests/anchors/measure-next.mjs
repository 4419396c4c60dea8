// The Next.js side of measure.mjs: next-app's build time with the SWC plugin on, off and
// with the Babel plugin (alternating, same run), and what each adds per 1,000 stamped
// elements: a client component of 1,000 buttons (a handler and a translated label each)
// on a page of its own, built off, with SWC and with Babel; the difference of the
// exported JS, raw and gzipped, and of the page's HTML.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { appDir, filesOf, nextBabelBuild, nextBuild } from "./build.mjs";

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const BUILDS = {
  off: (dir) => nextBuild(dir),
  swc: (dir) => nextBuild(dir, { REDLINE_ANCHORS: "1" }),
  babel: (dir) => nextBabelBuild(dir),
};

export function nextBuildTimes(rounds, out) {
  const ms = { off: [], swc: [], babel: [] };
  BUILDS.off(join(out, "next-warm")); // the first build of a run warms caches; not counted
  for (let i = 0; i < rounds; i++) {
    for (const [name, build] of Object.entries(BUILDS)) ms[name].push(build(join(out, `next-${name}`)));
  }
  const list = (l) => l.map((m) => m.toFixed(0)).join(", ");
  const [off, swc, babel] = [ms.off, ms.swc, ms.babel].map(median);
  console.log(`Next.js test app, ${rounds} builds each, alternating: SWC plugin on median ${swc.toFixed(0)} ms (${list(ms.swc)}), off ${off.toFixed(0)} ms (${list(ms.off)}), Babel plugin on ${babel.toFixed(0)} ms (${list(ms.babel)})`);
  console.log(`  overhead over off: SWC +${(swc - off).toFixed(0)} ms, Babel +${(babel - off).toFixed(0)} ms; SWC's / Babel's = ${((swc - off) / (babel - off)).toFixed(2)}`);
}

const buttons = () =>
  Array.from({ length: 1000 }, (_, i) => `      <button type="button" onClick={go}>{t("orders.action${i}")}</button>`).join("\n");

export function nextBytesPerThousand(out) {
  const big = join(appDir("next-app"), "app/big");
  mkdirSync(big, { recursive: true });
  try {
    writeFileSync(join(big, "page.jsx"), 'import { Big } from "./buttons";\n\nexport default function BigPage() {\n  return <Big />;\n}\n');
    writeFileSync(join(big, "buttons.jsx"), `"use client";\nconst t = (key) => key;\nconst go = () => {};\n\nexport function Big() {\n  return (\n    <section>\n${buttons()}\n    </section>\n  );\n}\n`);
    const sizes = {};
    for (const [name, build] of Object.entries(BUILDS)) {
      build(join(out, `big-${name}`));
      const files = filesOf(join(out, `big-${name}`));
      const js = Buffer.concat([...files].filter(([f]) => f.endsWith(".js")).map(([, b]) => b));
      sizes[name] = { js: js.length, gzip: gzipSync(js).length, html: files.get("big.html").length };
    }
    for (const name of ["swc", "babel"]) {
      const [on, off] = [sizes[name], sizes.off];
      console.log(`Next.js, 1,000 buttons, ${name === "swc" ? "SWC" : "Babel"} plugin (anchor and i18n test id): JS +${on.js - off.js} B raw, +${on.gzip - off.gzip} B gzipped; the exported page's HTML +${on.html - off.html} B`);
    }
  } finally {
    rmSync(big, { recursive: true, force: true });
  }
}
