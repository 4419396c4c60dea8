"use client";
import { useState } from "react";
import { t } from "./messages";

export function OrderToolbar() {
  const [count, setCount] = useState(0);
  return (
    <div className="toolbar">
      <button type="button" onClick={() => setCount(count + 1)}>
        {t("orders.export")}
      </button>
      <output>{count}</output>
    </div>
  );
}
