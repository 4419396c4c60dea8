// Next.js: which Babel config to use. Next compiles with Babel instead of SWC whenever
// a Babel config exists, so put this in `babel.config.js` only for review builds (see
// the README); the plugin itself stays off unless REDLINE_ANCHORS=1.
"use strict";

const babelPlugin = require("./babel.cjs");

/** A Babel config for Next.js: `module.exports = require("redline-anchors/next").babelConfig()`. */
function babelConfig(options = {}) {
  return { presets: ["next/babel"], plugins: [[babelPlugin, options]] };
}

module.exports = { babelConfig };
