import { t } from "./messages";
import { OrderList, OrderSummary } from "./orders";
import { OrderToolbar } from "./toolbar";

export default function OrdersPage() {
  return (
    <main>
      <h1>{t("orders.title")}</h1>
      <OrderToolbar />
      <OrderList />
      <OrderSummary />
    </main>
  );
}
