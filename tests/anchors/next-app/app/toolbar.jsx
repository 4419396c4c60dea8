"use client";
import { useState } from "react";
import { t } from "./messages";

export function OrderToolbar() {
  const [count, setCount] = useState(0);
  return (
    <div className="toolbar" style={{ display: "flex", flexDirection: "column", alignItems: "flex-start", gap: 48 }}>
      <button type="button" onClick={() => setCount(count + 1)} style={{ padding: "12px 24px", fontSize: 18 }}>
        {t("orders.export")}
      </button>
      <output>{count}</output>
    </div>
  );
}
