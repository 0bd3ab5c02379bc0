// envreg ui: keyboard navigation of the matrix and live updates. No framework, no
// build step; every value on the page is rendered (and escaped) by the server, this
// script only moves focus and swaps in a fresh copy of the page when the registry
// changes. It never writes anything anywhere.
"use strict";

// ---- the matrix as an ARIA grid: one tab stop, arrow keys move --------------------
let gridPosition = null; // [row, column] of the cell holding tabindex=0

function gridCells(grid) {
  return Array.from(grid.rows).map((row) => Array.from(row.cells));
}

function cellKey(cell) {
  return cell.dataset.cell || cell.dataset.env || (cell.parentElement && cell.parentElement.dataset.service) || "";
}

function focusCell(cells, row, column) {
  row = Math.max(0, Math.min(row, cells.length - 1));
  column = Math.max(0, Math.min(column, cells[row].length - 1));
  const previous = gridPosition && cells[gridPosition[0]] && cells[gridPosition[0]][gridPosition[1]];
  if (previous) previous.tabIndex = -1;
  const cell = cells[row][column];
  cell.tabIndex = 0;
  gridPosition = [row, column];
  cell.focus();
}

function initGrid(restore) {
  const grid = document.getElementById("matrix");
  if (!grid) return;
  const cells = gridCells(grid);
  for (const row of cells) {
    for (const cell of row) {
      cell.tabIndex = -1;
      // Links inside cells are opened with Enter; they are not separate tab stops.
      for (const link of cell.querySelectorAll("a")) link.tabIndex = -1;
    }
  }
  let start = [cells.length > 1 ? 1 : 0, cells[0].length > 1 ? 1 : 0];
  if (restore) {
    cells.forEach((row, r) => row.forEach((cell, c) => {
      if (cellKey(cell) === restore) start = [r, c];
    }));
  }
  cells[start[0]][start[1]].tabIndex = 0;
  gridPosition = start;
  if (restore) cells[start[0]][start[1]].focus();

  grid.addEventListener("focusin", (event) => {
    const cell = event.target.closest("td, th");
    if (!cell || !grid.contains(cell)) return;
    const r = cell.parentElement.rowIndex;
    const c = cell.cellIndex;
    if (gridPosition && (gridPosition[0] !== r || gridPosition[1] !== c)) {
      const old = cells[gridPosition[0]] && cells[gridPosition[0]][gridPosition[1]];
      if (old) old.tabIndex = -1;
      cell.tabIndex = 0;
      gridPosition = [r, c];
    }
  });

  grid.addEventListener("keydown", (event) => {
    if (!gridPosition) return;
    const [r, c] = gridPosition;
    const last = cells.length - 1;
    const moves = {
      ArrowRight: [r, c + 1],
      ArrowLeft: [r, c - 1],
      ArrowDown: [r + 1, c],
      ArrowUp: [r - 1, c],
      Home: event.ctrlKey ? [0, 0] : [r, 0],
      End: event.ctrlKey ? [last, cells[last].length - 1] : [r, cells[r].length - 1],
      PageDown: [r + 10, c],
      PageUp: [r - 10, c],
    };
    if (event.key in moves) {
      event.preventDefault();
      const [nr, nc] = moves[event.key];
      focusCell(cells, nr, nc);
    } else if (event.key === "Enter" || event.key === " ") {
      const link = cells[r][c].querySelector("a");
      if (link) {
        event.preventDefault();
        link.click();
      }
    }
  });
}

// ---- live: the registry's change events ---------------------------------------------
function openDetails() {
  return Array.from(document.querySelectorAll("details[open]"))
    .map((d) => d.dataset.key || "")
    .filter((key) => key !== "");
}

async function refresh(generation) {
  const focused = document.activeElement;
  const focusKey = focused && focused.closest && focused.closest("#matrix td, #matrix th")
    ? cellKey(focused.closest("#matrix td, #matrix th"))
    : null;
  const reopen = openDetails();
  const wrap = document.querySelector(".grid-wrap");
  const scroll = wrap ? [wrap.scrollLeft, wrap.scrollTop] : null;
  let response;
  try {
    response = await fetch(window.location.href, { headers: { Accept: "text/html" } });
  } catch (error) {
    announce("The registry changed, but the page could not be fetched again.");
    return;
  }
  const text = await response.text();
  const fresh = new DOMParser().parseFromString(text, "text/html");
  const main = fresh.getElementById("main");
  const nav = fresh.querySelector("header.top nav");
  if (!main || !nav) return;
  document.getElementById("main").replaceWith(document.adoptNode(main));
  document.querySelector("header.top nav").replaceWith(document.adoptNode(nav));
  document.title = fresh.title;
  document.body.dataset.generation = fresh.body.dataset.generation || String(generation);
  for (const key of reopen) {
    const details = document.querySelector(`details[data-key="${CSS.escape(key)}"]`);
    if (details) details.open = true;
  }
  const freshWrap = document.querySelector(".grid-wrap");
  if (scroll && freshWrap) [freshWrap.scrollLeft, freshWrap.scrollTop] = scroll;
  gridPosition = null;
  initGrid(focusKey);
  announce(`Updated from disk (registry generation ${document.body.dataset.generation}).`);
}

function announce(sentence) {
  const live = document.getElementById("live");
  if (live) live.textContent = sentence;
}

let pending = Promise.resolve();

function listen() {
  if (!window.EventSource) return;
  const events = new EventSource("/events");
  events.addEventListener("change", (event) => {
    const generation = event.data;
    if (generation === document.body.dataset.generation) return;
    // One refresh at a time, in order; a burst of edits ends on the newest page.
    pending = pending.then(() => {
      if (generation !== document.body.dataset.generation) return refresh(generation);
      return undefined;
    });
  });
  events.addEventListener("open", () => announce("Live: changes on disk appear here."));
}

document.addEventListener("DOMContentLoaded", () => {
  initGrid(null);
  listen();
});
