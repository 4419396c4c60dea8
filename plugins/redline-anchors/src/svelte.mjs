// The Svelte transform: stamps a component's markup before @sveltejs/vite-plugin-svelte
// compiles it. Parsed with the app's own `svelte/compiler` (Svelte 5's modern AST,
// offsets into the file); ./markup.mjs inserts the attributes.
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { LABEL_ATTRIBUTES, isInteractive, keyOfCall, stamps, translationKey } = require("./rules.cjs");

/** svelte-i18n's translation stores, called with their `$` (`$_`, `$t` and `$format` are one). */
const TRANSLATE = ["$_", "$t", "$format"];
/** Top-level nodes that render nothing in the component's place. */
const PLACELESS = new Set(["Comment", "SnippetBlock", "SvelteHead", "SvelteWindow", "SvelteDocument", "SvelteBody", "SvelteOptions"]);

const findAttribute = (element, name) => element.attributes.find((a) => a.type === "Attribute" && a.name === name);

/** An attribute's value when it is one expression (`name={…}`); its text when static. */
function attributeValue(attribute) {
  const value = Array.isArray(attribute?.value) && attribute.value.length === 1 ? attribute.value[0] : attribute?.value;
  if (value?.type === "ExpressionTag") return { expression: value.expression };
  if (value?.type === "Text") return { text: value.data };
  return {};
}

function keyOf(element) {
  const children = element.fragment.nodes.map((n) => (n.type === "ExpressionTag" ? keyOfCall(n.expression, TRANSLATE) : undefined));
  const labels = LABEL_ATTRIBUTES.map((name) => {
    const { expression } = attributeValue(findAttribute(element, name));
    return expression && keyOfCall(expression, TRANSLATE);
  });
  return translationKey(children, labels);
}

/** Svelte 5's `onclick={…}` or Svelte 4's `on:click`. */
const hasHandler = (element) =>
  element.attributes.some((a) => a.type === "OnDirective" || (a.type === "Attribute" && /^on[a-z]+$/.test(a.name)));

/** The component's root: its one top-level element; several nodes side by side are a fragment. */
function rootOf(fragment) {
  const nodes = fragment.nodes.filter((n) => !PLACELESS.has(n.type) && !(n.type === "Text" && !n.data.trim()));
  return nodes.length === 1 && nodes[0].type === "RegularElement" ? nodes[0] : undefined;
}

/** Every element under `node`, through blocks (`{#if}`, `{#each}`, …) and components' children. */
function* elementsOf(node) {
  for (const value of Object.values(node)) {
    if (value?.type !== "Fragment") continue;
    for (const child of value.nodes) {
      if (child.type === "RegularElement") yield child;
      yield* elementsOf(child);
    }
  }
}

function lineAt(code) {
  const starts = [0];
  for (let i = code.indexOf("\n"); i >= 0; i = code.indexOf("\n", i + 1)) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle] <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
}

/**
 * What to insert into `code`, the .svelte file `file`: `{ offset, line, stamp }` per element.
 * `parse` is `svelte/compiler`'s; the component's name is the file's, as in Svelte.
 */
export function insertionsOfSvelte(code, { file, parse }) {
  const ast = parse(code, { filename: file, modern: true });
  const root = rootOf(ast.fragment);
  const name = path.basename(file, ".svelte");
  const line = lineAt(code);
  const insertions = [];
  for (const element of elementsOf(ast)) {
    const stamp = stamps({
      interactive: isInteractive(element.name, { role: attributeValue(findAttribute(element, "role")).text, hasHandler: hasHandler(element) }),
      component: element === root ? name : undefined,
      written: { anchor: findAttribute(element, "data-fabric-src"), testId: findAttribute(element, "data-testid") },
      key: keyOf(element),
    });
    insertions.push({ offset: element.start + 1 + element.name.length, line: line(element.start), stamp });
  }
  return insertions;
}
