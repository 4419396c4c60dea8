// withRedlineAnchors: off, the config itself; on, the SWC plugin added to what the config
// has; an unsupported Next.js refused by name.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";

const require = createRequire(import.meta.url);
const { withRedlineAnchors, assertSupportedNext } = require("../src/next.cjs");

describe("redline-anchors/next", () => {
  test("off: the config is returned as it is", () => {
    const config = { output: "export" };
    assert.equal(withRedlineAnchors(config, { enabled: false }), config);
  });

  test("an unsupported Next.js fails the build, naming its version and the supported ones", () => {
    assert.doesNotThrow(() => assertSupportedNext("16.4.6"));
    assert.doesNotThrow(() => assertSupportedNext("16.4.0-canary.3"));
    assert.doesNotThrow(() => assertSupportedNext("16.5.0"));
    for (const version of ["15.5.4", "16.3.8", "16.6.0", "17.0.0", undefined]) {
      assert.throws(() => assertSupportedNext(version), (e) => e.message.includes(`Next.js ${version} is not supported`) && e.message.includes("16.4.x, 16.5.x"));
    }
  });
});
