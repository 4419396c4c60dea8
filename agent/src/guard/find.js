// redline guard, evaluated in the stage page (WebDriver "execute script"): finds each
// element by its attempts in order (test id, source anchor, CSS path, text; the order is
// redline_protocol::locate's, computed in Rust and passed in), following CSS paths
// across open shadow roots and same-origin frames (redline_protocol::element_path, the
// path split in Rust). Answers what found each element, their boxes in viewport CSS px
// of the top page, the scroll, viewport, pixel ratio and the build the page states.
const [elements, maxMatches] = arguments;

function resolveInTree(root, parts) {
  let node = root;
  for (let i = 0; i < parts.length; i++) {
    const found = node && node.querySelector(parts[i]);
    if (!found) return null;
    if (i === parts.length - 1) return found;
    node = found.shadowRoot;
  }
  return null;
}

// The document an element's path leads into (its frames), and the frames' offsets.
function documentOf(framePaths) {
  let doc = document;
  let dx = 0, dy = 0;
  for (const parts of framePaths) {
    const frame = resolveInTree(doc, parts);
    const inner = frame && frame.contentDocument;
    if (!inner) return null;
    const r = frame.getBoundingClientRect();
    dx += r.left + frame.clientLeft;
    dy += r.top + frame.clientTop;
    doc = inner;
  }
  return { doc, dx, dy };
}

function byText(doc, tag, text) {
  const found = [];
  for (const candidate of doc.querySelectorAll(tag || "body *")) {
    if ((candidate.textContent || "").trim() === text) {
      for (let i = found.length - 1; i >= 0; i--) if (found[i].contains(candidate)) found.splice(i, 1);
      found.push(candidate);
      if (found.length >= maxMatches) break;
    }
  }
  return found;
}

function tryAttempt(place, attempt) {
  try {
    if (attempt.kind === "selector") return Array.from(place.doc.querySelectorAll(attempt.selector)).slice(0, maxMatches);
    if (attempt.kind === "cssPath") {
      const el = resolveInTree(place.doc, attempt.parts);
      return el ? [el] : [];
    }
    return byText(place.doc, attempt.tag, attempt.text);
  } catch (e) {
    return []; // a selector this browser does not read finds nothing
  }
}

const located = [];
const boxes = [];
for (const element of elements) {
  const place = documentOf(element.frames);
  let matchedBy = null, count = 0;
  for (const attempt of place ? element.attempts : []) {
    const matches = tryAttempt(place, attempt);
    if (matches.length > 0) {
      matchedBy = attempt.matchedBy;
      count = matches.length;
      for (const m of matches) {
        const r = m.getBoundingClientRect();
        boxes.push({ x: r.left + place.dx, y: r.top + place.dy, width: r.width, height: r.height });
      }
      break;
    }
  }
  located.push({ label: element.label, matchedBy, count });
}
const meta = document.querySelector('meta[name="fabric-git-sha"]');
const nav = performance.getEntriesByType("navigation")[0];
return {
  located,
  boxes,
  scroll: { x: window.scrollX, y: window.scrollY },
  viewport: { width: window.innerWidth, height: window.innerHeight },
  devicePixelRatio: window.devicePixelRatio,
  gitSha: meta ? meta.getAttribute("content") : null,
  url: document.URL,
  status: nav && nav.responseStatus ? nav.responseStatus : null,
  ready: document.readyState === "complete",
};
