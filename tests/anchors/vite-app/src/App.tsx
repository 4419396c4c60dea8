import { useState } from "react";
import { Trans, useTranslation } from "react-i18next";

type Order = { id: number; customer: string };

const ORDERS: Order[] = [
  { id: 1042, customer: "Maria Lopez" },
  { id: 1041, customer: "Kenji Watanabe" },
];

export function OrderToolbar({ onExport }: { onExport: () => void }) {
  const { t } = useTranslation();
  return (
    <div className="toolbar">
      <input type="search" aria-label={t("orders.search")} />
      <button type="button" onClick={onExport} style={{ padding: "12px 24px", fontSize: 18 }}>
        {t("orders.export")}
      </button>
    </div>
  );
}

function OrderRow({ order }: { order: Order }) {
  return (
    <li>
      #{order.id} {order.customer}
    </li>
  );
}

export function App() {
  const { t } = useTranslation();
  const [exported, setExported] = useState(0);
  return (
    <main style={{ fontFamily: "sans-serif", padding: 40 }}>
      <h1>{t("orders.title")}</h1>
      <OrderToolbar onExport={() => setExported(exported + 1)} />
      <ul data-testid="order-list">
        {ORDERS.map((order) => (
          <OrderRow key={order.id} order={order} />
        ))}
      </ul>
      <p>
        <Trans i18nKey="orders.summary" values={{ count: ORDERS.length + exported }} />
      </p>
    </main>
  );
}
