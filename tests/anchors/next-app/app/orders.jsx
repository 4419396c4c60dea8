import { t } from "./messages";

const ORDERS = [
  { id: 1042, customer: "Maria Lopez" },
  { id: 1041, customer: "Kenji Watanabe" },
];

function OrderRow({ order }) {
  return (
    <li>
      #{order.id} {order.customer}
    </li>
  );
}

function OrderRows() {
  return (
    <ul data-testid="orders-table">
      {ORDERS.map((order) => (
        <OrderRow key={order.id} order={order} />
      ))}
    </ul>
  );
}

/** A fragment: its paragraph is no component's root. */
export function OrderSummary() {
  return (
    <>
      <p>{t("orders.empty")}</p>
    </>
  );
}

/** Another component: no element of its own to stamp. */
export function OrderList() {
  return <OrderRows />;
}
