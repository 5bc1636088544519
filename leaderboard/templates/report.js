"use strict";
(function () {
  const table = document.getElementById("leaderboard");
  const headers = Array.from(table.tHead.rows[0].cells);

  function key(entry, column, numeric) {
    const text = entry.rows[0].cells[column].dataset.value;
    if (!numeric) return text.toLowerCase();
    return text === "" ? null : Number(text);
  }

  function sortBy(header) {
    const column = headers.indexOf(header);
    const numeric = header.dataset.type === "number";
    const first = numeric ? "descending" : "ascending";
    const current = header.getAttribute("aria-sort");
    const direction = current === first ? (first === "descending" ? "ascending" : "descending") : first;
    const sign = direction === "ascending" ? 1 : -1;
    const entries = Array.from(table.tBodies);
    entries.sort(function (a, b) {
      const x = key(a, column, numeric);
      const y = key(b, column, numeric);
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return x < y ? -sign : sign;
    });
    for (const entry of entries) table.appendChild(entry);
    for (const other of headers) other.removeAttribute("aria-sort");
    header.setAttribute("aria-sort", direction);
  }

  for (const header of headers) {
    header.querySelector("button").addEventListener("click", function () { sortBy(header); });
  }
  for (const toggle of table.querySelectorAll("button.toggle")) {
    toggle.addEventListener("click", function () {
      const details = document.getElementById(toggle.getAttribute("aria-controls"));
      const open = toggle.getAttribute("aria-expanded") === "true";
      details.hidden = open;
      toggle.setAttribute("aria-expanded", String(!open));
    });
  }
})();
