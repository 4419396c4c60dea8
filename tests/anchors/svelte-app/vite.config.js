import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";
import redlineAnchors from "redline-anchors";

// REDLINE_ANCHORS=1 turns the plugin on (review builds). The test also builds with
// ANCHORS_TEST_WITHOUT_PLUGIN=1, a config without the plugin at all, to show that the
// plugin switched off changes no byte.
export default defineConfig({
  plugins: [...(process.env.ANCHORS_TEST_WITHOUT_PLUGIN ? [] : [redlineAnchors()]), svelte()],
});
