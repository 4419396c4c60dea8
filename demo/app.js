// The demo stage's own behaviour: new orders are added to the table.
document.getElementById("new-order").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const rows = document.getElementById("order-rows");
  const row = document.createElement("tr");
  row.dataset.testid = "order-row";
  const number = 1043 + rows.children.length - 4;
  for (const text of [`#${number}`, form.get("customer"), "Pending", `€ ${Number(form.get("total")).toFixed(2)}`]) {
    const cell = document.createElement("td");
    cell.textContent = text;
    row.append(cell);
  }
  rows.prepend(row);
  event.target.reset();
});
