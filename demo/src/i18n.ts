import i18n from "i18next";
import { initReactI18next } from "react-i18next";

// The page's words. Each text is a translation call, so the anchors plugin gives its
// element the message key as test id (`orders.export`).
i18n.use(initReactI18next).init({
  lng: "en",
  interpolation: { escapeValue: false },
  resources: {
    en: {
      translation: {
        "nav.home": "Acme Orders",
        "nav.orders": "Orders",
        "nav.customers": "Customers",
        "nav.reports": "Reports",
        "account.menu": "Account",
        "orders.title": "Orders",
        "orders.search": "Search orders",
        "orders.export": "Export CSV",
        "orders.column.number": "Order",
        "orders.column.customer": "Customer",
        "orders.column.status": "Status",
        "orders.column.total": "Total",
        "orders.summary": "{{count}} orders · € {{total}}",
        "orders.new.title": "New order",
        "orders.new.customer.label": "Customer",
        "orders.new.total.label": "Total (€)",
        "orders.new.card.label": "Card number",
        "orders.new.cancel": "Cancel",
        "orders.new.submit": "Create order",
      },
    },
  },
});
