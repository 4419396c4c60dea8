// A static export, so the test serves plain files; nothing here about anchors.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

export default { output: "export", turbopack: { root: dirname(fileURLToPath(import.meta.url)) } };
