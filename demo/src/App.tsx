// The demo stage: an orders page. Built with the redline-anchors plugin on (see
// xtask/src/stage.rs), so its test ids and source anchors are the ones a team gets on
// its own app: no data-fabric-src is written here, and a data-testid only where an
// element has no translated text to name it.
import { useEffect, useState, type FormEvent } from "react";
import { useTranslation } from "react-i18next";

type Order = { number: number; customer: string; status: string; total: number };

const ORDERS: Order[] = [
  { number: 1042, customer: "Maria Lopez", status: "Paid", total: 129 },
  { number: 1041, customer: "Kenji Watanabe", status: "Pending", total: 48.5 },
  { number: 1040, customer: "Amara Okafor", status: "Shipped", total: 310.75 },
  { number: 1039, customer: "Lars Nilsson", status: "Refunded", total: 12 },
];

export function App() {
  const [orders, setOrders] = useState(ORDERS);
  // Only with ?live-totals (tests/e2e/context.test.mjs): the page asks an API this stage
  // does not serve, so it has a failed request to file, as a page with a broken backend.
  useEffect(() => {
    if (new URLSearchParams(location.search).has("live-totals")) {
      fetch(`api/order-totals?since=${ORDERS[ORDERS.length - 1].number}`).catch(() => {});
    }
  }, []);
  const add = (customer: string, total: number) =>
    setOrders([{ number: orders[0].number + 1, customer, status: "Pending", total }, ...orders]);
  return (
    <>
      <AppHeader />
      <main className="layout">
        <OrderList orders={orders} />
        <NewOrderForm onCreate={add} />
      </main>
    </>
  );
}

function AppHeader() {
  const { t } = useTranslation();
  return (
    <header className="topbar">
      <a className="brand" href="./">{t("nav.home")}</a>
      <MainNav />
      <button type="button" className="avatar" aria-label={t("account.menu")}>JD</button>
    </header>
  );
}

function MainNav() {
  const { t } = useTranslation();
  return (
    <nav>
      <a href="./" aria-current="page">{t("nav.orders")}</a>
      <a href="#customers">{t("nav.customers")}</a>
      <a href="#reports">{t("nav.reports")}</a>
    </nav>
  );
}

function OrderList({ orders }: { orders: Order[] }) {
  const { t } = useTranslation();
  const total = orders.reduce((sum, o) => sum + o.total, 0).toFixed(2);
  return (
    <section className="orders">
      <div className="section-head">
        <h1>{t("orders.title")}</h1>
        <OrderToolbar />
      </div>
      <OrderTable orders={orders} />
      <p className="summary">{t("orders.summary", { count: orders.length, total })}</p>
    </section>
  );
}

function OrderToolbar() {
  const { t } = useTranslation();
  return (
    <div className="toolbar">
      <input type="search" placeholder={t("orders.search")} aria-label={t("orders.search")} />
      <button type="button">{t("orders.export")}</button>
    </div>
  );
}

function OrderTable({ orders }: { orders: Order[] }) {
  const { t } = useTranslation();
  return (
    <table className="order-table">
      <thead>
        <tr>
          <th>{t("orders.column.number")}</th>
          <th>{t("orders.column.customer")}</th>
          <th>{t("orders.column.status")}</th>
          <th className="num">{t("orders.column.total")}</th>
        </tr>
      </thead>
      <tbody>
        {orders.map((order) => (
          <OrderRow key={order.number} order={order} />
        ))}
      </tbody>
    </table>
  );
}

function OrderRow({ order }: { order: Order }) {
  return (
    <tr>
      <td>#{order.number}</td>
      <td>{order.customer}</td>
      <td><span className={`badge ${order.status.toLowerCase()}`}>{order.status}</span></td>
      <td className="num">€ {order.total.toFixed(2)}</td>
    </tr>
  );
}

function NewOrderForm({ onCreate }: { onCreate: (customer: string, total: number) => void }) {
  const { t } = useTranslation();
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    onCreate(String(form.get("customer")), Number(form.get("total")));
    event.currentTarget.reset();
  };
  return (
    <aside className="new-order">
      <h2>{t("orders.new.title")}</h2>
      <form id="new-order" onSubmit={submit}>
        <label htmlFor="customer">{t("orders.new.customer.label")}</label>
        <input id="customer" name="customer" required data-testid="orders.new.customer" />
        <label htmlFor="total">{t("orders.new.total.label")}</label>
        <input id="total" name="total" type="number" min="0" step="0.01" required data-testid="orders.new.total" />
        <label htmlFor="card">{t("orders.new.card.label")}</label>
        <input id="card" name="card" autoComplete="cc-number" data-testid="orders.new.card" />
        <div className="form-actions">
          <button type="reset">{t("orders.new.cancel")}</button>
          <button type="submit" className="primary">{t("orders.new.submit")}</button>
        </div>
      </form>
    </aside>
  );
}
