// The report page, live: while the submission runs, the events stream (GET /api/submissions/{id}/events)
// updates each test's row as it lands, one event per test, keyed by its index; when a visible test fails
// or the verdict arrives, the report is re-read from the server so that the details (expected against
// got, heatmap, traceback) are the server's rendering. Hidden tests arrive with the verdict, without a
// status (the page shows them as one row: how many passed, and the first that did not). A dropped
// stream is resumed by the browser itself (EventSource sends Last-Event-ID; the server sends what came
// after it). A reload shows the same state, because the page itself is rendered from the DB.

import { FINAL, badge, badgeLabel, renderRelativeTimes, updateSubmission } from "./common.js";

const report = document.getElementById("report");
const announcer = document.getElementById("live-announcer");
const submissionId = report.dataset.submissionId;
const known = new Map(); // test index -> its test event, re-applied after a refresh
let refreshTimer = 0;
let refreshing = null;
let finished = report.dataset.final === "true";

function rows() {
  return report.querySelectorAll("tr.result-row");
}

function rowFor(index) {
  for (const row of rows()) if (row.dataset.testIndex === String(index)) return row;
  return null;
}

function formatMs(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${Math.round(ms)} ms`;
  return `${ms.toFixed(1)} ms`;
}

/** A test's peak memory and its limit, as the server writes them (numbers.py fmt_mb); "" when not measured. */
function formatMemory(test) {
  if (!Number.isInteger(test.memory_mb) || test.memory_mb < 0) return "";
  const limit = Number.isInteger(test.memory_limit_mb) && test.memory_limit_mb > 0 ? ` of ${test.memory_limit_mb} MB` : "";
  return `${test.memory_mb} MB${limit}`;
}

function updateCounts() {
  let done = 0;
  let passed = 0;
  const all = rows();
  for (const row of all) {
    if (row.dataset.status !== "pending") done += 1;
    if (row.dataset.status === "passed") passed += 1;
  }
  const set = (selector, value) => {
    for (const element of report.querySelectorAll(selector)) element.textContent = String(value);
  };
  set("[data-finished]", done);
  set("[data-passed]", passed);
  const progress = report.querySelector("[data-progress]");
  if (progress) progress.value = done;
}

/** What a visible test printed, under its name, as text (the server caps it and marks a cut). */
function showOutput(row, test) {
  const box = row.querySelector("[data-test-output]");
  if (!box) return; // a hidden test: never any output
  const output = test.visible && typeof test.output === "string" ? test.output : "";
  box.querySelector("[data-test-output-text]").textContent = output;
  box.hidden = output === "";
}

/** Shows one test's result in its row; `again` when re-applying after a refresh (never refreshes again). */
function applyTest(test, again = false) {
  if (!test || typeof test.index !== "number") return;
  known.set(test.index, test);
  if (test.status === null || test.status === undefined) return; // a hidden test's progress: shown with the verdict
  const row = rowFor(test.index);
  if (!row) {
    if (!again) scheduleRefresh(); // a row the page does not have (the problem changed): the server lays it out
    return;
  }
  const changed = row.dataset.status !== test.status;
  if (changed) {
    row.dataset.status = test.status;
    row.className = row.className.replace(/\bstatus-\S+/, `status-${test.status}`);
    row.querySelector("[data-test-badge]").replaceChildren(badge("test", test.status));
  }
  row.querySelector("[data-test-time]").textContent = formatMs(test.time_ms);
  const memory = row.querySelector("[data-test-memory]");
  if (memory) memory.textContent = formatMemory(test);
  const message = row.querySelector("[data-test-message]");
  message.textContent = test.visible && test.status !== "passed" && test.message ? test.message : "";
  showOutput(row, test);
  if (changed && !again && test.visible && test.status !== "passed") {
    scheduleRefresh(); // its details (expected against got, traceback) are rendered by the server
  }
  updateCounts();
}

function applyStatus(data) {
  if (data.status !== report.dataset.status) {
    report.dataset.status = data.status;
    scheduleRefresh(); // the banner's words and explanation come from the server
  }
}

function applyVerdict(verdict) {
  finished = true;
  const tests = Array.isArray(verdict.tests) ? verdict.tests : [];
  const hidden = verdict.hidden || {};
  const label = badgeLabel("status", verdict.status);
  // A hidden test without a status counts through the summary, never as a test of its own.
  const passed =
    tests.filter((test) => test.status === "passed").length + (hidden.per_test ? 0 : Number(hidden.passed) || 0);
  const total = Number(verdict.tests_total) || tests.length;
  announcer.textContent = `${label}: ${passed} of ${total} tests passed.`;
  document.title = document.title.replace(/^[^·]+·/, `${label} ·`);
  updateSubmission(submissionId, { status: verdict.status, score: verdict.score });
  refresh();
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refresh, 150);
}

async function refresh() {
  clearTimeout(refreshTimer);
  if (refreshing) {
    await refreshing;
  }
  refreshing = (async () => {
    try {
      const response = await fetch(window.location.pathname, { headers: { Accept: "text/html" }, cache: "no-store" });
      if (!response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("report");
      if (!fresh) return;
      // Spread first: the NodeList is live, and moving a node out of it would skip its neighbour.
      report.replaceChildren(...Array.from(fresh.childNodes));
      for (const [name, value] of Object.entries(fresh.dataset)) report.dataset[name] = value;
      if (report.dataset.final !== "true") {
        for (const test of known.values()) applyTest(test, true); // events newer than the page we fetched
      }
      renderRelativeTimes(report);
    } catch {
      // Keep what is shown; the next event or a reload brings the rest.
    } finally {
      refreshing = null;
    }
  })();
  await refreshing;
}

function listen() {
  const events = new EventSource(`/api/submissions/${encodeURIComponent(submissionId)}/events`);
  events.addEventListener("status", (event) => applyStatus(JSON.parse(event.data)));
  events.addEventListener("test", (event) => applyTest(JSON.parse(event.data)));
  events.addEventListener("verdict", (event) => {
    events.close(); // the stream ends after the verdict; without this the browser would reconnect
    applyVerdict(JSON.parse(event.data));
  });
  events.addEventListener("error", () => {
    // EventSource reconnects by itself with Last-Event-ID, and the stream goes on after that event; once
    // the verdict is in (or the server answered 204), there is nothing left to listen for.
    if (finished || events.readyState === EventSource.CLOSED) events.close();
  });
}

const status = report.dataset.status;
if (FINAL.has(status)) {
  updateSubmission(submissionId, { status, score: Number(report.dataset.score) || 0 });
} else {
  listen();
}
renderRelativeTimes(report);
