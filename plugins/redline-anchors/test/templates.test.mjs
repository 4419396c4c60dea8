// The Vue and Svelte transforms on small components, through the Vite plugin as a build
// runs it (its compilers are this package's dev dependencies, as an app's would be).
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import redlineAnchors from "../src/vite.mjs";

const ROOT = "/repo";
const SHA = "a91c4e2a91c4e2a91c4e2a91c4e2a91c4e2a91c4";

/** The plugin on, resolved as in a build of an app at this package's folder. */
function plugin(options = {}) {
  const p = redlineAnchors({ enabled: true, root: ROOT, sha: SHA, ...options });
  p.configResolved({ root: fileURLToPath(new URL("..", import.meta.url)) });
  return p;
}

/** `source`'s lines as the plugin stamps `file`; null when it leaves it alone. */
async function stamp(file, lines, options) {
  const result = await plugin(options).transform(lines.join("\n"), file);
  return result && result.code;
}

/** Each stamped element's tag and our attributes, in source order. */
function attributes(code) {
  return [...code.matchAll(/<([a-z][\w-]*)((?: data-fabric-src="[^"]*")?(?: data-testid="[^"]*")?)/g)].map(([, tag, added]) => {
    const found = { tag };
    for (const [, name, value] of added.matchAll(/ ([\w-]+)="([^"]*)"/g)) found[name] = value;
    return found;
  });
}

const by = (els, tag, i = 0) => els.filter((e) => e.tag === tag)[i];

describe("redline-anchors on Vue single-file components", () => {
  const file = "/repo/src/components/OrderToolbar.vue";
  const toolbar = [
    '<script setup lang="ts">', //                                           1
    "const { t } = useI18n();", //                                           2
    "</script>", //                                                          3
    "", //                                                                   4
    "<template>", //                                                         5
    '  <div class="toolbar">', //                                            6
    "    <input :aria-label=\"t('orders.search')\" />", //                   7
    "    <button @click=\"go\">{{ $t('orders.export') }}</button>", //        8
    "    <button v-t=\"'orders.clear'\" />", //                              9
    '    <span role="button" v-on:keydown="k">x</span>', //                 10
    "    <p>plain</p>", //                                                  11
    "    <hr />", //                                                        12
    "    <label><i18n-t keypath=\"orders.customer\" /></label>", //        13
    "    <em>{{ $t('a') }}{{ $t('b') }}</em>", //                           14
    "    <strong>{{ t(dynamicKey) }}</strong>", //                          15
    "    <OrderMenu><a href=\"/\">{{ t(['orders.home']) }}</a></OrderMenu>", // 16
    "  </div>", //                                                          17
    "</template>", //                                                       18
  ];

  test("controls and the component's root get anchors naming their line; test ids from vue-i18n", async () => {
    const els = attributes(await stamp(file, toolbar));
    const src = (line) => `src/components/OrderToolbar.vue:${line}`;
    assert.deepEqual(by(els, "div"), { tag: "div", "data-fabric-src": src(6), "data-testid": "order-toolbar" });
    assert.deepEqual(by(els, "input"), { tag: "input", "data-fabric-src": src(7), "data-testid": "orders.search" });
    assert.deepEqual(by(els, "button"), { tag: "button", "data-fabric-src": src(8), "data-testid": "orders.export" });
    assert.deepEqual(by(els, "button", 1), { tag: "button", "data-fabric-src": src(9), "data-testid": "orders.clear" });
    assert.deepEqual(by(els, "span"), { tag: "span", "data-fabric-src": src(10) });
    assert.deepEqual(by(els, "p"), { tag: "p" }, "a plain paragraph is no control");
    assert.deepEqual(by(els, "label"), { tag: "label", "data-testid": "orders.customer" }, "<i18n-t keypath> names its parent");
    assert.deepEqual(by(els, "em"), { tag: "em" }, "two keys: no one key is the text");
    assert.deepEqual(by(els, "strong"), { tag: "strong" }, "a key only known at run time is not guessed");
    assert.deepEqual(by(els, "a"), { tag: "a", "data-fabric-src": src(16), "data-testid": "orders.home" }, "inside a component's slot too");
    assert.deepEqual(by(els, "i18n-t"), { tag: "i18n-t" }, "components are not stamped");
  });

  test("a hand-written test id wins, static or bound; ours come first so a v-bind spread overrides them", async () => {
    const code = await stamp("/repo/src/Panel.vue", [
      "<template>",
      '  <section data-testid="my-panel">',
      "    <button :data-testid=\"id\" v-bind=\"attrs\">{{ $t('k') }}</button>",
      "  </section>",
      "</template>",
    ]);
    assert.match(code, /<section data-fabric-src="src\/Panel\.vue:2" data-testid="my-panel">/);
    assert.match(code, /<button data-fabric-src="src\/Panel\.vue:3" :data-testid="id" v-bind="attrs">/);
  });

  test("roots: one element, or a v-if chain; side by side is a fragment; a component's root is its own", async () => {
    const roots = async (...template) => {
      const code = await stamp("/repo/src/OrderStatus.vue", ["<template>", ...template, "</template>"]);
      return code && attributes(code).filter((e) => e.tag !== "template");
    };
    assert.deepEqual((await roots('  <b v-if="ok" />', "  <!-- no -->", "  <i v-else />")).map((e) => e["data-testid"]), ["order-status", "order-status"]);
    assert.deepEqual(await roots("  <h2>a</h2>", "  <button>b</button>"), [{ tag: "h2" }, { tag: "button", "data-fabric-src": "src/OrderStatus.vue:3" }]);
    assert.equal(await roots("  <OrderRows />"), null, "nothing to stamp");
    assert.equal(await roots('  <template v-if="ok"><p /></template>'), null, "a <template> root is a fragment");
  });

  test("only the component itself, inside the root, in HTML templates; a source map comes along", async () => {
    const template = ["<template>", "  <button>x</button>", "</template>"];
    assert.equal(await stamp(`${file}?vue&type=style&index=0&lang.css`, template), null, "a block of the component");
    assert.equal(await stamp("/elsewhere/A.vue", template), null, "outside the root");
    assert.equal(await stamp("/repo/node_modules/lib/A.vue", template), null, "a dependency");
    assert.equal(await stamp(file, ['<template lang="pug">', "button x", "</template>"]), null, "pug is not parsed");
    const result = await plugin().transform(template.join("\n"), file);
    assert.deepEqual(result.map.sources, [file]);
    assert.ok(result.map.mappings.length > 0);
  });
});

describe("redline-anchors on Svelte components", () => {
  const file = "/repo/src/lib/OrderToolbar.svelte";
  const toolbar = [
    '<script lang="ts">', //                                                 1
    '  import { _, t } from "svelte-i18n";', //                              2
    "  let n: number = 0;", //                                               3
    "</script>", //                                                          4
    "", //                                                                   5
    "<svelte:head><title>Orders</title></svelte:head>", //                   6
    '<div class="toolbar">', //                                              7
    '  <input aria-label={$t("orders.search")} />', //                        8
    '  <button onclick={() => n++}>{$_("orders.export", { values: { n } })}</button>', // 9
    '  <span role="button" on:keydown={k}>x</span>', //                      10
    "  <p>plain</p>", //                                                     11
    "  <em>{$_('a')}{$_('b')}</em>", //                                       12
    "  <strong>{$_(dynamicKey)}</strong>", //                                13
    '  {#if n}<a href="/">{$format(`orders.home`)}</a>{/if}', //              14
    "  {#each rows as row}<li>{row}</li>{/each}", //                         15
    "</div>", //                                                             16
  ];

  test("controls and the component's root get anchors naming their line; test ids from svelte-i18n", async () => {
    const els = attributes(await stamp(file, toolbar));
    const src = (line) => `src/lib/OrderToolbar.svelte:${line}`;
    assert.deepEqual(by(els, "div"), { tag: "div", "data-fabric-src": src(7), "data-testid": "order-toolbar" });
    assert.deepEqual(by(els, "input"), { tag: "input", "data-fabric-src": src(8), "data-testid": "orders.search" });
    assert.deepEqual(by(els, "button"), { tag: "button", "data-fabric-src": src(9), "data-testid": "orders.export" });
    assert.deepEqual(by(els, "span"), { tag: "span", "data-fabric-src": src(10) });
    assert.deepEqual(by(els, "p"), { tag: "p" });
    assert.deepEqual(by(els, "em"), { tag: "em" }, "two keys: no one key is the text");
    assert.deepEqual(by(els, "strong"), { tag: "strong" }, "a key only known at run time is not guessed");
    assert.deepEqual(by(els, "a"), { tag: "a", "data-fabric-src": src(14), "data-testid": "orders.home" }, "inside blocks too");
    assert.deepEqual(by(els, "li"), { tag: "li" });
    assert.deepEqual(by(els, "title"), { tag: "title" }, "the head is not the root");
  });

  test("a hand-written test id wins, static or bound; ours come first so a spread overrides them", async () => {
    const code = await stamp("/repo/src/Panel.svelte", [
      '<section data-testid="my-panel">',
      '  <button data-testid={id} {...rest}>{$_("k")}</button>',
      "</section>",
    ]);
    assert.match(code, /<section data-fabric-src="src\/Panel\.svelte:1" data-testid="my-panel">/);
    assert.match(code, /<button data-fabric-src="src\/Panel\.svelte:2" data-testid=\{id\} \{\.\.\.rest\}>/);
  });

  test("roots: one element; side by side is a fragment; a component's root is its own", async () => {
    const roots = async (...markup) => {
      const code = await stamp("/repo/src/OrderStatus.svelte", markup);
      return code && attributes(code);
    };
    assert.deepEqual(await roots("<!-- one -->", "<b>x</b>"), [{ tag: "b", "data-fabric-src": "src/OrderStatus.svelte:2", "data-testid": "order-status" }]);
    assert.deepEqual(await roots("<h2>a</h2>", "<button>b</button>"), [{ tag: "h2" }, { tag: "button", "data-fabric-src": "src/OrderStatus.svelte:2" }]);
    assert.equal(await roots("<OrderRows />"), null, "nothing to stamp");
  });

  test("only the component itself, inside the root; a source map comes along", async () => {
    const markup = ["<button>x</button>"];
    assert.equal(await stamp(`${file}?svelte&type=style&lang.css`, markup), null, "a block of the component");
    assert.equal(await stamp("/elsewhere/A.svelte", markup), null, "outside the root");
    const result = await plugin().transform(markup.join("\n"), file);
    assert.deepEqual(result.map.sources, [file]);
  });
});

test("off: the Vite plugin has no hooks, whatever the stack", () => {
  const saved = process.env.REDLINE_ANCHORS;
  delete process.env.REDLINE_ANCHORS;
  try {
    assert.deepEqual(redlineAnchors(), { name: "redline-anchors" });
    assert.deepEqual(redlineAnchors({ enabled: false }), { name: "redline-anchors" });
  } finally {
    if (saved !== undefined) process.env.REDLINE_ANCHORS = saved;
  }
});
