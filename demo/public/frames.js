// The other origins of frames.html: the same server under other names (Chromium resolves
// `localhost` and any `*.localhost` to this machine), so each is a site of its own.
const other = (host, label) => `http://${host}:${location.port}/frame-button.html?label=${encodeURIComponent(label)}`;
document.getElementById("granted").src = other("localhost", "Pay granted");
document.getElementById("not-granted").src = other("elsewhere.localhost", "Pay elsewhere");

// A widget whose insides the page's scripts (and Redline) cannot read.
customElements.define("closed-widget", class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({ mode: "closed" });
    root.innerHTML = '<style>button { margin: 40px; font: 16px system-ui; }</style><button type="button">Closed action</button>';
  }
});
