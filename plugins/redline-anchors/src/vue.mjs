// The Vue transform: stamps a single-file component's <template> before
// @vitejs/plugin-vue compiles it. Parsed with the app's own `vue/compiler-sfc` (whose
// template offsets and lines are the whole file's); ./markup.mjs inserts the attributes.
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { LABEL_ATTRIBUTES, isInteractive, keyOfCall, staticString, stamps, translationKey } = require("./rules.cjs");

// @vue/compiler-core's node and element types.
const ELEMENT = 1;
const TEXT = 2;
const COMMENT = 3;
const INTERPOLATION = 5;
const ATTRIBUTE = 6;
const DIRECTIVE = 7;
const INTRINSIC = 0;

/** vue-i18n's translation functions: `$t` in templates, `t` from `useI18n()`. */
const TRANSLATE = ["t", "$t"];
/** vue-i18n's `<i18n-t keypath="key">` component, the template's `<Trans>`. */
const TRANSLATION_COMPONENTS = new Set(["i18n-t", "I18nT"]);

/** A written attribute, static (`name="…"`) or bound (`:name="…"`). */
function findProp(element, name) {
  return element.props.find((p) =>
    p.type === ATTRIBUTE ? p.name === name : p.name === "bind" && p.arg?.isStatic && p.arg.content === name,
  );
}

const staticAttribute = (element, name) => {
  const prop = findProp(element, name);
  return prop?.type === ATTRIBUTE ? prop.value?.content : undefined;
};

/** The key of an expression Vue parsed (its Babel AST; null for a plain identifier). */
const keyOfExpression = (expression) => (expression?.ast ? keyOfCall(expression.ast, TRANSLATE) : undefined);

/** `v-t="'key'"` or `v-t="{ path: 'key' }"`. */
function keyOfDirective(element) {
  const directive = element.props.find((p) => p.type === DIRECTIVE && p.name === "t");
  const ast = directive?.exp?.ast;
  if (!ast) return directive?.exp && /^\s*(['"])([^'"]*)\1\s*$/.exec(directive.exp.content)?.[2];
  if (ast.type !== "ObjectExpression") return staticString(ast);
  const pathProperty = ast.properties.find((p) => p.type === "ObjectProperty" && (p.key.name ?? p.key.value) === "path");
  return pathProperty && staticString(pathProperty.value);
}

function keyOfChild(child) {
  if (child.type === INTERPOLATION) return keyOfExpression(child.content);
  if (child.type === ELEMENT && TRANSLATION_COMPONENTS.has(child.tag)) return staticAttribute(child, "keypath");
  return undefined;
}

function keyOf(element) {
  const labels = LABEL_ATTRIBUTES.map((name) => {
    const prop = findProp(element, name);
    return prop?.type === DIRECTIVE ? keyOfExpression(prop.exp) : undefined;
  });
  return translationKey([keyOfDirective(element), ...element.children.map(keyOfChild)], labels);
}

const significant = (node) => node.type !== COMMENT && !(node.type === TEXT && !node.content.trim());
const hasDirective = (element, name) => element.props.some((p) => p.type === DIRECTIVE && p.name === name);

/**
 * The template's root elements: its one top-level element, or each branch of a
 * top-level `v-if`/`v-else-if`/`v-else` chain (one renders). Several roots side by side
 * are a fragment, which, as in React, has no root of its own.
 */
function rootsOf(template) {
  const nodes = template.children.filter(significant);
  if (nodes.length === 1 && nodes[0].type === ELEMENT) return new Set(nodes);
  const chain =
    nodes.length > 1 &&
    nodes.every((n) => n.type === ELEMENT) &&
    hasDirective(nodes[0], "if") &&
    nodes.slice(1).every((n) => hasDirective(n, "else-if") || hasDirective(n, "else"));
  return new Set(chain ? nodes : []);
}

function* elementsOf(node) {
  for (const child of node.children ?? []) {
    if (child.type !== ELEMENT) continue;
    yield child;
    yield* elementsOf(child);
  }
}

/**
 * What to insert into `code`, the .vue file `file`: `{ offset, line, stamp }` per element.
 * `parse` is `vue/compiler-sfc`'s; the component's name is the file's (Vue's own
 * inference for a component without a `name`).
 */
export function insertionsOfVue(code, { file, parse }) {
  const { descriptor } = parse(code, { filename: file, sourceMap: false });
  const template = descriptor.template;
  if (!template?.ast || (template.lang && template.lang !== "html") || template.src) return [];
  const roots = rootsOf(template.ast);
  const name = path.basename(file, ".vue");
  const insertions = [];
  for (const element of elementsOf(template.ast)) {
    if (element.tagType !== INTRINSIC) continue;
    const stamp = stamps({
      interactive: isInteractive(element.tag, {
        role: staticAttribute(element, "role"),
        hasHandler: hasDirective(element, "on"),
      }),
      component: roots.has(element) ? name : undefined,
      written: { anchor: findProp(element, "data-fabric-src"), testId: findProp(element, "data-testid") },
      key: keyOf(element),
    });
    const { offset, line } = element.loc.start;
    insertions.push({ offset: offset + 1 + element.tag.length, line, stamp });
  }
  return insertions;
}
