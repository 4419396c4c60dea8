import { t } from "./messages";
import { OrderToolbar } from "./toolbar";

export default function OrdersPage() {
  return (
    <main>
      <h1>{t("orders.title")}</h1>
      <OrderToolbar />
    </main>
  );
}
