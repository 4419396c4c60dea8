import i18n from "i18next";
import { initReactI18next } from "react-i18next";

i18n.use(initReactI18next).init({
  lng: "en",
  resources: {
    en: {
      translation: {
        "orders.title": "Orders",
        "orders.export": "Export CSV",
        "orders.search": "Search orders",
        "orders.summary": "{{count}} orders",
      },
    },
  },
});

export default i18n;
