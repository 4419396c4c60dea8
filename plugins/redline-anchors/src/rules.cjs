// The rules every transform (JSX, Vue, Svelte) applies, in one place so the stacks
// agree: which elements are controls, how a component's test id is spelled, and which
// calls are translations. Expressions are Babel or ESTree nodes (Svelte's parser is
// acorn, Vue's expressions go through Babel); both shapes are read here.
"use strict";

const INTERACTIVE_TAGS = new Set(["button", "a", "input", "select", "textarea"]);
const INTERACTIVE_ROLES = new Set([
  "button", "checkbox", "combobox", "gridcell", "link", "listbox", "menuitem", "menuitemcheckbox",
  "menuitemradio", "option", "radio", "scrollbar", "searchbox", "slider", "spinbutton", "switch",
  "tab", "textbox", "treeitem",
]);
/** Where a control without text says what it is; a translation call there names it. */
const LABEL_ATTRIBUTES = ["aria-label", "title", "placeholder", "alt"];

/** A control: an interactive tag, an interactive `role`, or an element with an event handler. */
function isInteractive(tag, { role, hasHandler }) {
  return INTERACTIVE_TAGS.has(tag) || hasHandler || INTERACTIVE_ROLES.has(role);
}

/** `OrderToolbar` → `order-toolbar`, `HTMLView` → `html-view`. */
function kebabCase(name) {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1-$2")
    .replace(/[^A-Za-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .toLowerCase();
}

/** A string known at build time: `"x"`, `'x'` or a template without expressions. */
function staticString(node) {
  if (!node) return undefined;
  if (node.type === "StringLiteral") return node.value;
  if (node.type === "Literal" && typeof node.value === "string") return node.value;
  if (node.type === "TemplateLiteral" && node.expressions.length === 0) return node.quasis[0].value.cooked;
  if (node.type === "JSXExpressionContainer") return staticString(node.expression);
  return undefined;
}

function unwrap(node) {
  while (node && /^(TSAsExpression|TSSatisfiesExpression|TSNonNullExpression|ParenthesizedExpression)$/.test(node.type)) {
    node = node.expression;
  }
  return node;
}

const isProperty = (p) => (p.type === "ObjectProperty" || p.type === "Property") && !p.computed;

/**
 * The key of a translation call: `t('k')`, `i18n.t('k')`, `t(['k', …])`,
 * `formatMessage({ id: 'k' })`, where `names` are the translation functions of the
 * stack (`t` for React; `$t` too for vue-i18n, `$_` for svelte-i18n).
 */
function keyOfCall(node, names = ["t"]) {
  node = unwrap(node);
  if (node?.type !== "CallExpression") return undefined;
  const { callee } = node;
  const name =
    callee.type === "Identifier" ? callee.name
      : callee.type === "MemberExpression" && !callee.computed ? callee.property.name
        : undefined;
  const [first] = node.arguments;
  if (names.includes(name)) {
    return staticString(first) ?? (first?.type === "ArrayExpression" ? staticString(first.elements[0]) : undefined);
  }
  if (name === "formatMessage" && first?.type === "ObjectExpression") {
    const id = first.properties.find((p) => isProperty(p) && (p.key.name ?? p.key.value) === "id");
    return id && staticString(id.value);
  }
  return undefined;
}

/**
 * The test id an element's text gives: the one key among its children's keys (two
 * different translations name nothing), else the first key among its label attributes'.
 */
function translationKey(childKeys, labelKeys) {
  const keys = new Set(childKeys.filter(Boolean));
  if (keys.size > 0) return keys.size === 1 ? [...keys][0] : undefined;
  return labelKeys.find(Boolean);
}

/**
 * What an element gets: an anchor if it is a control or a component's root and has
 * none written; a test id (its text's i18n key, else on a root the component's name in
 * kebab-case) if none is written.
 */
function stamps({ interactive, component, written, key }) {
  return {
    anchor: Boolean((interactive || component) && !written.anchor),
    testId: written.testId ? undefined : key ?? (component ? kebabCase(component) : undefined),
  };
}

module.exports = {
  LABEL_ATTRIBUTES,
  isInteractive,
  kebabCase,
  staticString,
  keyOfCall,
  translationKey,
  stamps,
};
