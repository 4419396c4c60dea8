import { createApp } from "vue";
import { createI18n } from "vue-i18n";
import App from "./App.vue";

const i18n = createI18n({
  legacy: false,
  locale: "en",
  messages: {
    en: {
      "orders.title": "Orders",
      "orders.export": "Export CSV",
      "orders.search": "Search orders",
      "orders.summary": "{count} orders",
      "orders.empty": "No orders yet",
    },
  },
});

createApp(App).use(i18n).mount("#app");
