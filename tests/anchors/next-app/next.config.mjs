// A static export, so the test serves plain files, with a fixed build id, so two builds
// of the same code are the same bytes. REDLINE_ANCHORS=1 adds the SWC plugin; the test
// also builds with ANCHORS_TEST_WITHOUT_PLUGIN=1, a config without withRedlineAnchors at
// all, to show that the plugin switched off changes no byte, and writes a babel.config.js
// for the build with the Babel plugin.
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const { withRedlineAnchors } = createRequire(import.meta.url)("redline-anchors/next");

const config = {
  output: "export",
  generateBuildId: () => "anchors-test",
  // The repository: redline-anchors is linked from ../../../plugins, and Turbopack
  // resolves nothing outside its root (the SWC plugin included).
  turbopack: { root: fileURLToPath(new URL("../../..", import.meta.url)) },
};

export default process.env.ANCHORS_TEST_WITHOUT_PLUGIN ? config : withRedlineAnchors(config);
