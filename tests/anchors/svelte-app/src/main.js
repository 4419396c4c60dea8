import { mount } from "svelte";
import { addMessages, init } from "svelte-i18n";
import App from "./App.svelte";

addMessages("en", {
  "orders.title": "Orders",
  "orders.export": "Export CSV",
  "orders.search": "Search orders",
  "orders.summary": "{count} orders",
  "orders.empty": "No orders yet",
});
init({ fallbackLocale: "en", initialLocale: "en" });

mount(App, { target: document.getElementById("app") });
