// What the template transforms (Vue, Svelte) share: the attributes written as markup
// right after an element's name, so that anything written on the element, including a
// spread, comes later and wins; magic-string (the app's, as Vue and Svelte bring it)
// keeps the source map.

const escape = (value) => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;");

/** ` data-fabric-src="src/x.vue:7" data-testid="key"`, as far as `stamp` asks for them. */
function attributes(stamp, anchor) {
  return (
    (stamp.anchor ? ` data-fabric-src="${escape(anchor)}"` : "") +
    (stamp.testId ? ` data-testid="${escape(stamp.testId)}"` : "")
  );
}

/**
 * `code` with each `{ offset, line, stamp }` inserted (the offset is just after the
 * element's name); `{ code, map }`, or null when nothing is stamped.
 */
export function insertAttributes(MagicString, code, { file, anchorPath }, insertions) {
  const s = new MagicString(code);
  for (const { offset, line, stamp } of insertions) {
    const text = attributes(stamp, `${anchorPath}:${line}`);
    if (text) s.appendLeft(offset, text);
  }
  if (!s.hasChanged()) return null;
  return { code: s.toString(), map: s.generateMap({ source: file, hires: true, includeContent: true }) };
}
