import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import redlineAnchors from "redline-anchors";

// Relative asset URLs, so the same build serves at `/` and under `/strict/`.
export default defineConfig({ base: "./", plugins: [redlineAnchors(), react()] });
