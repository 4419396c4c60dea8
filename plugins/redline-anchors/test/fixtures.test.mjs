// One fixture set, both JSX transforms: each file in fixtures/ is stamped by the Babel
// plugin and by the SWC plugin, and both must give every intrinsic element exactly the
// attributes its .json lists (anchor, test id, the meta tag's content, and where a
// spread is, the attributes' order).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { babelStamp, stampedElements, swcStamp } from "./transforms.mjs";

const FIXTURES = fileURLToPath(new URL("fixtures", import.meta.url));
const SHA = "a91c4e2a91c4e2a91c4e2a91c4e2a91c4e2a91c4";
const TRANSFORMS = { Babel: babelStamp, SWC: swcStamp };
const sources = readdirSync(FIXTURES).filter((f) => /\.[jt]sx$/.test(f));

for (const [name, stamp] of Object.entries(TRANSFORMS)) {
  describe(`the ${name} plugin on the shared fixtures`, () => {
    for (const source of sources) {
      test(source, () => {
        const file = join(FIXTURES, source);
        const code = readFileSync(file, "utf8");
        const expected = JSON.parse(readFileSync(file.replace(/\.[jt]sx$/, ".json"), "utf8"));
        const out = stamp(code, file, { root: FIXTURES, sha: SHA });
        const { elements, paths, directives } = stampedElements(out);
        assert.deepEqual(elements, expected);
        assert.deepEqual([...paths.values()].filter((p) => p === source), [source], "the module holds its path once");
        if (code.startsWith('"use client"')) assert.deepEqual(directives, ["use client"], "the directive stays first");
      });
    }
  });
}

describe("files the SWC plugin leaves alone", () => {
  const code = "export const A = () => <button>a</button>;";
  for (const [where, file] of [["outside the root", "/elsewhere/A.jsx"], ["a dependency", join(FIXTURES, "node_modules/lib/A.jsx")]]) {
    test(where, () => {
      assert.doesNotMatch(swcStamp(code, file, { root: FIXTURES, sha: SHA }), /fabric/);
    });
  }
});
