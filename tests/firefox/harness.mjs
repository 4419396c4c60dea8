// Firefox ESR with Redline's Firefox package installed as a temporary add-on, driven over
// WebDriver through geckodriver (Playwright cannot drive Debian's firefox-esr). The
// package is the zip `cargo xtask dist` ships, installed as it is. The server and the
// stage are the Chromium suite's (`tests/e2e/harness.mjs`). `cargo xtask test` sets
// REDLINE_BIN, XTASK_BIN, REDLINE_EXTENSION_ZIP (that zip), REDLINE_EXTENSION_DIR (the
// folder it was zipped from), FIREFOX and GECKODRIVER.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Builder, By, until } from "selenium-webdriver";
import firefox from "selenium-webdriver/firefox.js";

export { prepareServer, startStage } from "../e2e/harness.mjs";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run the Firefox tests with \`cargo xtask test\``);
  return value;
};

/** How long a wait on the page may take before the test fails, in ms. */
const WAIT = 20_000;

/**
 * Firefox with the zip `cargo xtask dist` ships installed as a temporary add-on, as a
 * person loads it from about:debugging, and the origins `grantOrigins` granted to it as a
 * person grants them (the manifest asks for any site as an optional host permission).
 */
export async function launchFirefox({ grantOrigins }) {
  const options = new firefox.Options().setBinary(env("FIREFOX")).addArguments("-headless");
  options.windowSize({ width: 1280, height: 800 });
  // Notifications as Firefox's own alert windows: a headless browser has no system
  // notification service to show them (they would be closed as soon as shown).
  options.setPreference("alerts.useSystemBackend", false);
  // `--allow-system-access` lets a test script run in the browser's own (chrome) context:
  // how a test opens a moz-extension:// page and clicks the toolbar button.
  const service = new firefox.ServiceBuilder(env("GECKODRIVER")).addArguments("--allow-system-access");
  const driver = await new Builder().forBrowser("firefox").setFirefoxOptions(options).setFirefoxService(service).build();
  let addonId, origin;
  try {
    addonId = await driver.installAddon(env("REDLINE_EXTENSION_ZIP"), true);
    // What Firefox's permission prompt and about:addons's Permissions tab do once the
    // person allows a site; the add-on's origin then, to open its pages.
    origin = await inChromeAsync(driver, `const done = arguments[arguments.length - 1];
      const { ExtensionPermissions } = ChromeUtils.importESModule("resource://gre/modules/ExtensionPermissions.sys.mjs");
      const policy = WebExtensionPolicy.getByID(arguments[0]);
      ExtensionPermissions.add(arguments[0], { permissions: [], origins: arguments[1] }, policy.extension)
        .then(() => done("moz-extension://" + policy.mozExtensionHostname), (error) => done("failed: " + error));`, addonId, grantOrigins);
    if (!origin.startsWith("moz-extension://")) throw new Error(`granting ${grantOrigins}: ${origin}`);
  } catch (error) {
    await driver.quit();
    throw error;
  }

  /** Runs `script` (a function body; `arguments` as WebDriver passes them) in the browser's chrome context. */
  async function inChrome(script, ...args) {
    await driver.setContext(firefox.Context.CHROME);
    try {
      return await driver.executeScript(script, ...args);
    } finally {
      await driver.setContext(firefox.Context.CONTENT);
    }
  }

  /** As [`inChrome`], for a script that ends by calling its last argument with the answer. */
  inChrome.async = (script, ...args) => inChromeAsync(driver, script, ...args);

  return {
    driver,
    addonId,
    extensionUrl: (path) => `${origin}/${path}`,
    /**
     * Opens `url` in a new tab and switches to it; resolves with its window handle. The
     * browser opens an extension page for the test, which WebDriver itself may not.
     */
    async openTab(url) {
      const before = new Set(await driver.getAllWindowHandles());
      await inChrome(
        `const tab = gBrowser.addTab(arguments[0], { triggeringPrincipal: Services.scriptSecurityManager.getSystemPrincipal() });
         gBrowser.selectedTab = tab;`,
        url,
      );
      let handle;
      await driver.wait(async () => {
        handle = (await driver.getAllWindowHandles()).find((h) => !before.has(h));
        return Boolean(handle);
      }, WAIT, `a tab for ${url}`);
      await driver.switchTo().window(handle);
      await driver.wait(async () => (await driver.getCurrentUrl()).startsWith(url.split("#")[0]), WAIT, `the tab loads ${url}`);
      return handle;
    },
    /**
     * Brings the tab showing `url` (its start) to the front, as a person switching tabs
     * would, while WebDriver stays in the tab it is in (switching WebDriver to a tab
     * selects it too).
     */
    async selectTab(url) {
      await inChrome(
        `const tab = gBrowser.tabs.find((t) => t.linkedBrowser.currentURI.spec.startsWith(arguments[0]));
         if (!tab) throw new Error("no tab shows " + arguments[0]);
         gBrowser.selectedTab = tab;`,
        url,
      );
    },
    /**
     * Clicks Redline's toolbar button for the selected tab, as a person would (it grants
     * activeTab); resolves with when (`Date.now()` in the browser) it was clicked.
     */
    async clickAction() {
      return inChrome(
        `const { ExtensionParent } = ChromeUtils.importESModule("resource://gre/modules/ExtensionParent.sys.mjs");
         const action = ExtensionParent.apiManager.global.browserActionFor(WebExtensionPolicy.getByID(arguments[0]).extension);
         const clickedAt = Date.now();
         action.triggerAction(window);
         return clickedAt;`,
        addonId,
      );
    },
    /** Presses Redline's shortcut (Alt+Shift+C) in the browser window, as a person would. */
    async pressShortcut() {
      await inChrome(
        `const id = arguments[0].toLowerCase().replace(/[^a-z0-9_-]/g, "_");
         const keys = [...(document.getElementById("ext-keyset-id-" + id)?.children ?? [])];
         const key = keys.find((k) => k.getAttribute("key") === "C" && /alt/.test(k.getAttribute("modifiers")) && /shift/.test(k.getAttribute("modifiers")));
         if (!key) throw new Error("Firefox bound no Alt+Shift+C for Redline");
         key.doCommand();`,
        addonId,
      );
    },
    /** The ids of the notifications Redline shows now, as Firefox's notifications API lists them. */
    async notifications() {
      return inChrome(`${NOTIFICATIONS_OF}
         return [...(notificationsOf(arguments[0])?.notificationsMap.keys() ?? [])];`, addonId);
    },
    /**
     * Clicks the notification `id` as a person would: what Firefox does when the system
     * says its alert was clicked (a headless browser shows none to click).
     */
    async clickNotification(id) {
      await inChrome(`${NOTIFICATIONS_OF}
         const shown = notificationsOf(arguments[0]).notificationsMap.get(arguments[1]);
         if (!shown) throw new Error("no notification " + arguments[1]);
         shown.observe(null, "alertclickcallback");`, addonId, id);
    },
    /**
     * Opens Redline's sidebar as a person does from *View → Sidebar*; resolves with the
     * address the sidebar's page loaded.
     */
    async openSidebar() {
      return inChrome.async(`const { ExtensionCommon } = ChromeUtils.importESModule("resource://gre/modules/ExtensionCommon.sys.mjs");
         const id = ExtensionCommon.makeWidgetId(arguments[0]) + "-sidebar-action";
         const done = arguments[arguments.length - 1];
         SidebarController.show(id).then(() => {
           const panel = () => SidebarController.browser.contentDocument?.getElementById("webext-panels-browser");
           const loaded = () => panel()?.currentURI?.spec.startsWith("moz-extension:") && panel().currentURI.spec;
           const wait = () => loaded() ? done(loaded()) : setTimeout(wait, 50);
           wait();
         }, (error) => done("failed: " + error));`, addonId);
    },
    async close() {
      await driver.quit().catch(() => {});
    },
  };
}

/** Runs `script` in `driver`'s browser's chrome context, as [`launchFirefox`]'s `inChrome.async`. */
async function inChromeAsync(driver, script, ...args) {
  await driver.setContext(firefox.Context.CHROME);
  try {
    return await driver.executeAsyncScript(script, ...args);
  } finally {
    await driver.setContext(firefox.Context.CONTENT);
  }
}

/**
 * A chrome-context function: Firefox's notifications API of the add-on `id`, as its
 * parent process keeps it (what `notifications.getAll()` lists, and what a click on a
 * system alert reaches).
 */
const NOTIFICATIONS_OF = `function notificationsOf(id) {
  const { ExtensionParent } = ChromeUtils.importESModule("resource://gre/modules/ExtensionParent.sys.mjs");
  return ExtensionParent.apiManager.apis.get(WebExtensionPolicy.getByID(id).extension).get("notifications");
}`;

/** The element matching `css`, once it is there. */
export async function find(driver, css) {
  return driver.wait(until.elementLocated(By.css(css)), WAIT, `waiting for ${css}`);
}

/**
 * The overlay's frame element, in the closed shadow root of its host: WebDriver's own
 * view of the page reaches into closed roots, which a page's scripts cannot.
 */
export async function overlayFrame(driver) {
  const host = await find(driver, "#redline-overlay-host");
  return (await host.getShadowRoot()).findElement(By.css("iframe"));
}

/** Waits until an element matching `css` shows `text` (a substring). */
export async function waitForText(driver, css, text) {
  await driver.wait(async () => {
    for (const element of await driver.findElements(By.css(css))) {
      if ((await element.getText().catch(() => "")).includes(text)) return true;
    }
    return false;
  }, WAIT, `waiting for ${css} to show "${text}"`);
}

/** Waits until nothing matches `css`. */
export async function waitForNone(driver, css) {
  await driver.wait(async () => (await driver.findElements(By.css(css))).length === 0, WAIT, `waiting for ${css} to go`);
}

/** The button named `name` (its label or its text), once it is there. */
export async function button(driver, name) {
  const named = By.xpath(`//button[@aria-label="${name}" or normalize-space(.)="${name}"]`);
  return driver.wait(until.elementLocated(named), WAIT, `the button ${name}`);
}

/** Signs the panel (the current tab) in to `server` through its Settings form. */
export async function signIn(driver, server) {
  await (await button(driver, "Settings")).click();
  const url = await find(driver, "#api-url");
  await url.clear();
  await url.sendKeys(server.url);
  const token = await find(driver, "#token");
  await token.clear();
  await token.sendKeys(server.token);
  await (await button(driver, "Save")).click();
  await waitForText(driver, '[data-testid="connection-status"]', "Connected as");
}

/** Draws a closed freehand loop around `rect` (viewport CSS px) with the mouse, as a person would. */
export async function drawLasso(driver, rect, margin = 14) {
  const cx = rect.x + rect.width / 2;
  const cy = rect.y + rect.height / 2;
  const sx = (rect.width / 2 + margin) * 1.45;
  const sy = (rect.height / 2 + margin) * 1.45;
  const at = (a) => ({ x: Math.round(cx + sx * Math.cos(a)), y: Math.round(cy + sy * Math.sin(a)) });
  let actions = driver.actions({ async: true }).move({ ...at(0), origin: "viewport" }).press();
  for (let i = 1; i <= 48; i++) actions = actions.move({ ...at((i / 48) * 2 * Math.PI), origin: "viewport", duration: 10 });
  await actions.release().perform();
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Fails on any axe-core violation in the current document (a tab or the frame switched to). */
export async function assertAccessible(driver, what) {
  if (!(await driver.executeScript("return 'axe' in window"))) await driver.executeScript(axeSource);
  const violations = await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    window.axe.run(document, { resultTypes: ["violations"] }).then(({ violations }) =>
      done(violations.map((v) => v.id + ": " + v.help + " (" + v.nodes.map((n) => n.target.join(" ")).join(", ") + ")")),
      (error) => done(["axe failed: " + error]));`);
  assert.deepEqual(violations, [], `axe-core finds no violations in ${what}`);
}
