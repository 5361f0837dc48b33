// The problem page: the editor (with a draft kept per problem in this browser), the Submit button that
// POSTs JSON to /api/submissions and goes to the live report, Run and Run on my input (run.js),
// and this browser's submissions.

import { ownerHeaders, ownerToken, recordSubmission, renderBrowserState } from "./common.js";
import { Editor } from "./editor.js";
import { inputErrors, inputsBody, readInputs, refusal, renderRun, showInputErrors } from "./run.js";

const form = document.getElementById("submit-form");
const textarea = document.getElementById("source");
const submitButton = document.getElementById("submit-button");
const resetButton = document.getElementById("reset-button");
const errorBox = document.getElementById("submit-error");
const draftNote = document.querySelector("[data-draft-note]");
const problemId = form.dataset.problemId;
const problemTitle = form.dataset.problemTitle;
const draftKey = `torchjudge.draft.${problemId}`;
const starter = textarea.defaultValue;

function readDraft() {
  try {
    return localStorage.getItem(draftKey);
  } catch {
    return null;
  }
}

function writeDraft(text) {
  try {
    if (text === starter) localStorage.removeItem(draftKey);
    else localStorage.setItem(draftKey, text);
  } catch {
    // storage unavailable: the draft simply is not kept
  }
}

const draft = readDraft();
if (draft !== null && draft !== starter && draft.trim() !== "") {
  textarea.value = draft;
  draftNote.textContent = "Your last draft was restored.";
}

const editor = new Editor(textarea, { onSubmit: () => form.requestSubmit() });

// "Edit and submit again" on a report opens this page with ?from=<submission id>: that submission's code
// goes into the editor (and becomes the draft), not the latest draft.
async function loadFrom() {
  const params = new URLSearchParams(window.location.search);
  const from = params.get("from");
  if (!from || !/^[0-9a-f]{8,64}$/.test(from)) return;
  try {
    const response = await fetch(`/api/submissions/${encodeURIComponent(from)}/source`, { headers: { Accept: "text/plain" } });
    if (!response.ok) {
      draftNote.textContent = "That submission's code could not be loaded.";
      return;
    }
    const code = await response.text();
    editor.setValue(code);
    writeDraft(code);
    draftNote.textContent = `The code of submission ${from.slice(0, 8)} was loaded.`;
    params.delete("from");
    const query = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (query ? `?${query}` : "") + window.location.hash);
  } catch {
    draftNote.textContent = "That submission's code could not be loaded.";
  }
}
loadFrom();

const ownerSlot = document.querySelector("[data-owner-token-value]");
const token = ownerToken();
if (ownerSlot && token) ownerSlot.textContent = token;
else if (ownerSlot) ownerSlot.closest("[data-owner-token]").hidden = true;

let draftTimer = 0;
textarea.addEventListener("input", () => {
  clearTimeout(draftTimer);
  draftTimer = setTimeout(() => writeDraft(textarea.value), 300);
});
// Leaving within the debounce (a reload, a link, closing the tab) must not lose the last keystrokes.
window.addEventListener("pagehide", () => {
  clearTimeout(draftTimer);
  writeDraft(textarea.value);
});

resetButton.addEventListener("click", () => {
  if (textarea.value === starter) return;
  editor.setValue(starter);
  writeDraft(starter);
  draftNote.textContent = "Starter code restored. Ctrl+Z brings your code back.";
});

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = false;
}

function setBusy(busy) {
  submitButton.disabled = busy;
  submitButton.setAttribute("aria-busy", busy ? "true" : "false");
  submitButton.querySelector("span").textContent = busy ? "Submitting…" : "Submit";
}

async function submit(event) {
  event.preventDefault();
  if (submitButton.disabled) return;
  const source = textarea.value;
  errorBox.hidden = true;
  if (!source.trim()) {
    showError("Write some code first: the source is empty.");
    textarea.focus();
    return;
  }
  setBusy(true);
  writeDraft(source);
  let response;
  try {
    response = await fetch("/api/submissions", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", ...ownerHeaders() },
      body: JSON.stringify({ problem_id: problemId, source }),
    });
  } catch {
    setBusy(false);
    showError("The judge could not be reached. Check your connection and submit again.");
    return;
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok || !body || typeof body.id !== "string") {
    setBusy(false);
    const detail = body && typeof body.detail === "string" ? body.detail : `the judge answered ${response.status}`;
    if (response.status === 429) {
      const wait = response.headers.get("Retry-After") || "a few";
      showError(`The judge is busy (${detail}). Try again in ${wait} seconds.`);
    } else if (response.status === 413) {
      showError(`Your code is too large: ${detail}.`);
    } else {
      showError(`Not submitted: ${detail}.`);
    }
    return;
  }
  recordSubmission({
    id: body.id,
    problem_id: problemId,
    problem_title: problemTitle,
    status: body.status || "queued",
    score: 0,
    created_at: new Date().toISOString(),
  });
  window.location.assign(`/submissions/${encodeURIComponent(body.id)}`);
}

// -- Run: the visible tests, or the custom test on one's own input, with expected against got ------------
const runButton = document.getElementById("run-button");
const runError = document.getElementById("run-error");
const runResult = document.getElementById("run-result");
const runAnnouncer = document.getElementById("run-announcer");
const customForm = document.getElementById("custom-input");
const runCustomButton = document.getElementById("run-custom-button");
const argumentNames = customForm ? [...customForm.querySelectorAll("[data-argument]")].map((b) => b.dataset.argument) : [];

function setRunning(busy) {
  for (const button of [runButton, runCustomButton]) {
    if (!button) continue;
    button.disabled = busy;
    button.setAttribute("aria-busy", busy ? "true" : "false");
  }
  runButton.querySelector("span").textContent = busy ? "Running…" : "Run";
  if (runCustomButton) runCustomButton.querySelector("span").textContent = busy ? "Running…" : "Run on my input";
  if (busy) runAnnouncer.textContent = "Running your code…";
}

function showRunError(message) {
  runError.textContent = message;
  runError.hidden = false;
  runAnnouncer.textContent = "";
  runError.scrollIntoView({ block: "nearest" });
}

/** Runs the editor's code: on the visible tests, or (own) on the custom test with the form's values. */
async function run(own = false) {
  if (runButton.disabled) return;
  const source = textarea.value;
  runError.hidden = true;
  if (customForm) showInputErrors(customForm, new Map());
  if (!source.trim()) {
    showRunError("Write some code first: the source is empty.");
    return;
  }
  let body = JSON.stringify({ problem_id: problemId, source });
  if (own) {
    const { texts, errors } = readInputs(customForm);
    if (errors.length) {
      const first = showInputErrors(customForm, new Map(errors));
      showRunError("Not run: some values are not valid; see the fields marked below.");
      if (first) first.focus();
      return;
    }
    body = inputsBody(problemId, source, texts);
  }
  writeDraft(source);
  setRunning(true);
  let response;
  let answer = null;
  try {
    response = await fetch("/api/runs", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body,
    });
    answer = await response.json().catch(() => null);
  } catch {
    setRunning(false);
    showRunError("The judge could not be reached. Check your connection and run again.");
    return;
  }
  setRunning(false);
  if (!response.ok || !answer || !Array.isArray(answer.tests)) {
    const detail = answer && typeof answer.detail === "string" ? answer.detail : "";
    if (own && response.status === 422 && detail) {
      const { byName, rest } = inputErrors(detail, argumentNames);
      if (byName.size) {
        const first = showInputErrors(customForm, byName);
        const more = rest.length ? ` (${rest.join("; ")})` : "";
        showRunError(`Not run: some values do not fit this test; see the fields marked below${more}.`);
        if (first) first.focus();
        return;
      }
    }
    showRunError(refusal(response, answer));
    return;
  }
  runAnnouncer.textContent = renderRun(runResult, answer);
  showRunResult();
}

/** Brings Run's result into view and moves the focus to its heading (announced by screen readers). */
function showRunResult() {
  const title = document.getElementById("run-result-title");
  const reduce = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  runResult.scrollIntoView({ block: "start", behavior: reduce ? "auto" : "instant" });
  title.focus({ preventScroll: true });
}

if (customForm) {
  customForm.addEventListener("submit", (event) => {
    event.preventDefault();
    run(true);
  });
  document.getElementById("defaults-button").addEventListener("click", () => {
    for (const field of customForm.querySelectorAll(".custom-value")) {
      if (field.tagName === "SELECT") {
        for (const option of field.options) option.selected = option.defaultSelected;
      } else {
        field.value = field.defaultValue;
      }
    }
    showInputErrors(customForm, new Map());
  });
}
runButton.addEventListener("click", () => run(false));
form.addEventListener("submit", submit);
renderBrowserState();
