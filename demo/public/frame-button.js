// The button's label comes from the frame's address, so each frame's button is told apart.
const label = new URLSearchParams(location.search).get("label");
if (label) document.querySelector("button.pay").textContent = label;
