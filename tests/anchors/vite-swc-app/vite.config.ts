import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react-swc";
import redlineAnchors, { swcPlugins } from "redline-anchors";

// ../vite-app's page and sources, compiled by SWC instead of Babel: with REDLINE_ANCHORS=1
// SWC runs the anchors' plugin over the JSX and redlineAnchors writes the commit into
// index.html. ANCHORS_TEST_WITHOUT_PLUGIN=1 is the config without redline-anchors at all.
const root = fileURLToPath(new URL("../vite-app", import.meta.url));

export default defineConfig(
  process.env.ANCHORS_TEST_WITHOUT_PLUGIN
    ? { root, plugins: [react()] }
    : { root, plugins: [redlineAnchors({ jsx: false }), react({ plugins: swcPlugins() })] },
);
