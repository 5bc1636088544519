"use strict";
(function () {
  function key(row, column, numeric) {
    const text = row.cells[column].dataset.value || "";
    if (!numeric) return text.toLowerCase();
    return text === "" ? null : Number(text);
  }

  function sortBy(table, header) {
    const headers = Array.from(table.tHead.rows[0].cells);
    const column = headers.indexOf(header);
    const numeric = header.dataset.type === "number";
    const current = header.getAttribute("aria-sort");
    const direction = current === "descending" ? "ascending" : (current === "ascending" ? "descending"
      : (numeric && column !== 0 ? "descending" : "ascending"));
    const sign = direction === "ascending" ? 1 : -1;
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort(function (a, b) {
      const x = key(a, column, numeric);
      const y = key(b, column, numeric);
      if (x === y) return 0;
      if (x === null || x === "") return 1;
      if (y === null || y === "") return -1;
      return x < y ? -sign : sign;
    });
    for (const row of rows) body.appendChild(row);
    for (const other of headers) other.removeAttribute("aria-sort");
    header.setAttribute("aria-sort", direction);
  }

  for (const table of document.querySelectorAll("table.ranking")) {
    for (const header of table.tHead.rows[0].cells) {
      const button = header.querySelector("button");
      if (button) button.addEventListener("click", function () { sortBy(table, header); });
    }
  }
})();
