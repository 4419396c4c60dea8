// The Babel plugin: stamps source anchors and test ids on JSX at build time.
//
// Works wherever Babel compiles JSX (a Babel config, Next.js with a Babel config, the
// Vite plugin in ./vite.mjs). Uses only what Babel hands it (`api.types`), so it runs
// under whichever Babel 7 the build brings. Off unless `enabled: true` or
// REDLINE_ANCHORS=1: then it returns a plugin that visits nothing.
"use strict";

const { isEnabled, repoRoot, anchorPath, gitSha } = require("./build-info.cjs");
const { LABEL_ATTRIBUTES, isInteractive, kebabCase, staticString, keyOfCall, stamps, translationKey: keyAmong } = require("./rules.cjs");

const componentNamed = (name) => (typeof name === "string" && /^[A-Z]/.test(name) ? name : undefined);

function attributeName(attribute) {
  if (attribute.type !== "JSXAttribute") return undefined;
  const { name } = attribute;
  return name.type === "JSXNamespacedName" ? `${name.namespace.name}:${name.name.name}` : name.name;
}

function elementName(name) {
  if (name.type === "JSXIdentifier") return name.name;
  if (name.type === "JSXMemberExpression") return `${elementName(name.object)}.${name.property.name}`;
  return undefined;
}

function attributeString(opening, name) {
  const attribute = opening.attributes.find((a) => attributeName(a) === name);
  return attribute && staticString(attribute.value);
}

/** The key of a child that is a translation: `{t('k')}`, `<Trans i18nKey="k">`, `<FormattedMessage id="k">`. */
function keyOfChild(child) {
  if (child.type === "JSXExpressionContainer") return keyOfCall(child.expression);
  if (child.type === "JSXElement") {
    const name = elementName(child.openingElement.name)?.split(".").pop();
    if (name === "Trans") return attributeString(child.openingElement, "i18nKey");
    if (name === "FormattedMessage") return attributeString(child.openingElement, "id");
  }
  return undefined;
}

/**
 * The i18n key an element's text is: the one translation among its children, or, for a
 * control without translated text, the translation in its label attribute.
 */
function translationKey(element) {
  const labelKeys = LABEL_ATTRIBUTES.map((name) => {
    const attribute = element.openingElement.attributes.find((a) => attributeName(a) === name);
    return attribute?.value?.type === "JSXExpressionContainer" ? keyOfCall(attribute.value.expression) : undefined;
  });
  return keyAmong(element.children.map(keyOfChild), labelKeys);
}

/** The name of the component a function is: its own, or the variable it (wrapped in `memo(…)`) is bound to. */
function componentOfFunction(fn) {
  if (fn.isClassMethod() || fn.isClassPrivateMethod()) {
    if (fn.node.key.name !== "render") return undefined;
    return componentNamed(fn.parentPath.parentPath.node.id?.name);
  }
  if (fn.node.id) return componentNamed(fn.node.id.name);
  let parent = fn.parentPath;
  while (parent?.isCallExpression() || parent?.isTSAsExpression?.()) parent = parent.parentPath;
  if (parent?.isVariableDeclarator() && parent.node.id.type === "Identifier") return componentNamed(parent.node.id.name);
  return undefined;
}

/** The component whose returned root `element` is, if it is one. */
function rootOfComponent(element) {
  let child = element;
  let parent = element.parentPath;
  while (
    (parent.isConditionalExpression() && child.key !== "test") ||
    parent.isLogicalExpression() ||
    parent.isParenthesizedExpression() ||
    parent.isTSAsExpression?.() ||
    parent.isTSSatisfiesExpression?.()
  ) {
    child = parent;
    parent = parent.parentPath;
  }
  if (parent.isReturnStatement()) {
    const fn = parent.getFunctionParent();
    return fn && componentOfFunction(fn);
  }
  if (parent.isArrowFunctionExpression() && child.key === "body") return componentOfFunction(parent);
  return undefined;
}

function redlineAnchors(api, options = {}) {
  const t = api.types;
  if (!isEnabled(options)) return { name: "redline-anchors", visitor: {} };
  const meta = options.meta !== false;

  const attribute = (name, value) => t.jsxAttribute(t.jsxIdentifier(name), value);

  return {
    name: "redline-anchors",
    pre(file) {
      const filename = file.opts.filename;
      const cwd = file.opts.cwd ?? process.cwd();
      this.anchorPath =
        filename && !/[\\/]node_modules[\\/]/.test(filename) ? anchorPath(filename, repoRoot(options, cwd)) : undefined;
      this.cwd = cwd;
      this.pathId = undefined;
    },
    visitor: {
      Program: {
        exit(program) {
          if (!this.pathId) return;
          // One string per module: every anchor of the file is this constant plus ":LINE".
          program.unshiftContainer(
            "body",
            t.variableDeclaration("const", [t.variableDeclarator(this.pathId, t.stringLiteral(this.anchorPath))]),
          );
        },
      },
      JSXOpeningElement(path) {
        if (!this.anchorPath) return;
        const { node } = path;
        if (node.name.type !== "JSXIdentifier" || !/^[a-z]/.test(node.name.name)) return;
        const tag = node.name.name;
        const element = path.parentPath;
        const has = (name) => node.attributes.some((a) => attributeName(a) === name);
        const component = rootOfComponent(element);
        const interactive = isInteractive(tag, {
          role: attributeString(node, "role"),
          hasHandler: node.attributes.some((a) => /^on[A-Z]/.test(attributeName(a) ?? "")),
        });

        const stamp = stamps({
          interactive,
          component,
          written: { anchor: has("data-fabric-src"), testId: has("data-testid") },
          key: translationKey(element.node),
        });
        // Prepended, so a written attribute or a spread later in the list wins.
        const added = [];
        if (stamp.anchor && node.loc) {
          this.pathId ??= path.scope.getProgramParent().generateUidIdentifier("fabricSrc");
          const value = t.binaryExpression("+", t.cloneNode(this.pathId), t.stringLiteral(`:${node.loc.start.line}`));
          added.push(attribute("data-fabric-src", t.jsxExpressionContainer(value)));
        }
        if (stamp.testId) added.push(attribute("data-testid", t.stringLiteral(stamp.testId)));
        if (added.length) node.attributes.unshift(...added);

        const sha = tag === "head" && meta ? gitSha(options, this.cwd) : undefined;
        if (sha && !element.node.children.some(isShaMeta)) {
          const metaTag = t.jsxElement(
            t.jsxOpeningElement(
              t.jsxIdentifier("meta"),
              [attribute("name", t.stringLiteral("fabric-git-sha")), attribute("content", t.stringLiteral(sha))],
              true,
            ),
            null,
            [],
            true,
          );
          if (node.selfClosing) {
            node.selfClosing = false;
            element.node.closingElement = t.jsxClosingElement(t.jsxIdentifier("head"));
          }
          element.node.children.unshift(metaTag);
        }
      },
    },
  };
}

function isShaMeta(child) {
  return (
    child.type === "JSXElement" &&
    elementName(child.openingElement.name) === "meta" &&
    attributeString(child.openingElement, "name") === "fabric-git-sha"
  );
}

module.exports = redlineAnchors;
module.exports.default = redlineAnchors;
module.exports.kebabCase = kebabCase;
