// Next.js compiles with Babel when this file exists; the plugin stays off unless
// REDLINE_ANCHORS=1. See plugins/redline-anchors/README.md.
module.exports = require("redline-anchors/next").babelConfig();
