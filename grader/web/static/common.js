// What every page shares: this browser's list of submissions (localStorage, no accounts), the status
// badges (cloned from the server's <template> elements so words and icons stay the server's), the
// recent-submissions lists and the "solved" marks. Everything user-controlled goes in as text, never HTML.

const STORE_KEY = "torchjudge.submissions.v1";
const OWNER_KEY = "torchjudge.owner.v1";
const MAX_KEPT = 100;
// The final statuses, as the server lists them on every page (grader/grading/verdict.py FINAL).
export const FINAL = new Set((document.body.dataset.finalStatuses || "").split(" ").filter(Boolean));

function isEntry(value) {
  return (
    value !== null &&
    typeof value === "object" &&
    typeof value.id === "string" &&
    /^[0-9a-f]{8,64}$/.test(value.id) &&
    typeof value.problem_id === "string" &&
    typeof value.status === "string"
  );
}

export function loadSubmissions() {
  try {
    const parsed = JSON.parse(localStorage.getItem(STORE_KEY) || "[]");
    return Array.isArray(parsed) ? parsed.filter(isEntry) : [];
  } catch {
    return []; // storage disabled or corrupted: behave as a fresh browser
  }
}

function saveSubmissions(list) {
  try {
    localStorage.setItem(STORE_KEY, JSON.stringify(list.slice(0, MAX_KEPT)));
  } catch {
    // Private mode or a full quota: the list is a convenience, grading does not depend on it.
  }
}

/** This browser's own token (made once, kept in localStorage): its submissions are stored under it, and
 * GET /api/me/submissions lists them, those sent from `grader submit` with GRADER_OWNER_TOKEN included.
 * Null when storage is unavailable. */
export function ownerToken() {
  try {
    let token = localStorage.getItem(OWNER_KEY);
    if (!token || !/^[A-Za-z0-9_-]{16,128}$/.test(token)) {
      const bytes = new Uint8Array(16);
      crypto.getRandomValues(bytes);
      token = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
      localStorage.setItem(OWNER_KEY, token);
    }
    return token;
  } catch {
    return null;
  }
}

/** The headers that say whose a request is: the owner token, when there is one. */
export function ownerHeaders() {
  const token = ownerToken();
  return token ? { "X-Owner-Token": token } : {};
}

export function recordSubmission(entry) {
  const list = loadSubmissions().filter((item) => item.id !== entry.id);
  list.unshift(entry);
  saveSubmissions(list);
}

/** Updates a submission this browser made; a report opened from someone else's link is not added. */
export function updateSubmission(id, patch) {
  const list = loadSubmissions();
  const entry = list.find((item) => item.id === id);
  if (!entry) return false;
  Object.assign(entry, patch);
  saveSubmissions(list);
  return true;
}

export function progressFor(problemId) {
  const mine = loadSubmissions().filter((item) => item.problem_id === problemId);
  return {
    attempts: mine.length,
    solved: mine.some((item) => item.status === "accepted"),
    last: mine[0] || null,
  };
}

/** A status badge: a copy of the server-rendered <template id="tpl-{kind}-{status}">. */
export function badge(kind, status) {
  const template = document.getElementById(`tpl-${kind}-${status}`);
  if (template instanceof HTMLTemplateElement) {
    return template.content.firstElementChild.cloneNode(true);
  }
  const fallback = document.createElement("span");
  fallback.className = "badge";
  fallback.textContent = status.replaceAll("_", " ");
  return fallback;
}

export function badgeLabel(kind, status) {
  const template = document.getElementById(`tpl-${kind}-${status}`);
  const label = template instanceof HTMLTemplateElement && template.content.querySelector(".badge-label");
  return label ? label.textContent : status.replaceAll("_", " ");
}

const relative = typeof Intl !== "undefined" && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: "auto" }) : null;

export function relativeTime(iso) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.round((then - Date.now()) / 1000);
  if (!relative) return new Date(then).toLocaleString();
  const steps = [
    [60, "second"],
    [60, "minute"],
    [24, "hour"],
    [7, "day"],
    [4.35, "week"],
    [12, "month"],
    [Infinity, "year"],
  ];
  let value = seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
    value /= size;
  }
  return new Date(then).toLocaleString();
}

/** Fills every [data-recent-list] (optionally only one problem's, via data-problem). */
export function renderRecentLists() {
  const all = loadSubmissions();
  for (const list of document.querySelectorAll("[data-recent-list]")) {
    const problem = list.dataset.problem || "";
    const limit = Number(list.dataset.limit || 10);
    const entries = all.filter((item) => !problem || item.problem_id === problem).slice(0, limit);
    const items = entries.map((entry) => {
      const li = document.createElement("li");
      const link = document.createElement("a");
      link.href = `/submissions/${entry.id}`;
      const title = document.createElement("span");
      title.className = "recent-title";
      title.textContent = problem ? `Submission ${entry.id.slice(0, 8)}` : entry.problem_title || entry.problem_id;
      const when = document.createElement("time");
      when.className = "recent-when";
      when.dateTime = entry.created_at || "";
      when.textContent = relativeTime(entry.created_at || "");
      when.title = entry.created_at ? new Date(entry.created_at).toLocaleString() : "";
      const outcome = document.createElement("span");
      outcome.className = "recent-outcome";
      outcome.append(badge("status", entry.status));
      if (FINAL.has(entry.status) && entry.status !== "accepted" && typeof entry.score === "number") {
        const score = document.createElement("span");
        score.className = "recent-score";
        score.textContent = `score ${Math.round(entry.score * 100)}%`;
        outcome.append(score);
      }
      link.append(title, when, outcome);
      li.append(link);
      return li;
    });
    list.replaceChildren(...items);
    const empty = list.parentElement && list.parentElement.querySelector("[data-recent-empty]");
    if (empty) empty.hidden = items.length > 0;
  }
}

/** Fills every [data-progress-for="problem-id"] with this browser's progress on that problem. */
export function renderProgress() {
  for (const slot of document.querySelectorAll("[data-progress-for]")) {
    const progress = progressFor(slot.dataset.progressFor);
    if (progress.solved) {
      slot.replaceChildren(badge("status", "accepted"));
      const label = slot.querySelector(".badge-label");
      if (label) label.textContent = "Solved";
    } else if (progress.attempts > 0) {
      const text = document.createElement("span");
      text.className = "muted";
      text.textContent = `Attempted ${progress.attempts} time${progress.attempts === 1 ? "" : "s"}`;
      slot.replaceChildren(text);
    }
  }
}

export function renderRelativeTimes(root = document) {
  for (const element of root.querySelectorAll("time[data-relative]")) {
    const iso = element.getAttribute("datetime");
    if (!iso) continue;
    element.title = new Date(iso).toLocaleString();
    element.textContent = relativeTime(iso);
  }
}

/** Asks the API about submissions this browser left before their verdict came (a closed tab). */
async function refreshUnfinished() {
  const unfinished = loadSubmissions()
    .filter((entry) => !FINAL.has(entry.status))
    .slice(0, 10);
  let changed = false;
  await Promise.all(
    unfinished.map(async (entry) => {
      try {
        const response = await fetch(`/api/submissions/${encodeURIComponent(entry.id)}`, {
          headers: { Accept: "application/json" },
        });
        if (response.status === 404) {
          // The server no longer knows it (a fresh database): it is not this browser's to show.
          saveSubmissions(loadSubmissions().filter((item) => item.id !== entry.id));
          changed = true;
          return;
        }
        if (!response.ok) return;
        const verdict = await response.json();
        if (verdict.status !== entry.status) {
          changed = updateSubmission(entry.id, { status: verdict.status, score: verdict.score }) || changed;
        }
      } catch {
        // offline: keep what is stored
      }
    }),
  );
  if (changed) {
    renderRecentLists();
    renderProgress();
  }
}

/** Adds the server's history of this owner (submissions from another tab, the API or the CLI under the
 * same token) to this browser's list. A server with API keys has no owner tokens: then nothing changes. */
async function syncFromServer() {
  const headers = { Accept: "application/json", ...ownerHeaders() };
  if (!headers["X-Owner-Token"]) return;
  let listed;
  try {
    const response = await fetch("/api/me/submissions?limit=100", { headers });
    if (!response.ok) return;
    listed = await response.json();
  } catch {
    return;
  }
  if (!listed || !Array.isArray(listed.submissions)) return;
  const known = new Map(loadSubmissions().map((entry) => [entry.id, entry]));
  let changed = false;
  for (const row of listed.submissions) {
    if (!isEntry(row)) continue;
    const entry = known.get(row.id);
    if (!entry) {
      known.set(row.id, { id: row.id, problem_id: row.problem_id, status: row.status, score: row.score, created_at: row.created_at });
      changed = true;
    } else if (entry.status !== row.status) {
      Object.assign(entry, { status: row.status, score: row.score });
      changed = true;
    }
  }
  if (!changed) return;
  const merged = [...known.values()].sort((a, b) => String(b.created_at || "").localeCompare(String(a.created_at || "")));
  saveSubmissions(merged);
  renderRecentLists();
  renderProgress();
}

export function renderBrowserState() {
  renderRecentLists();
  renderProgress();
  renderRelativeTimes();
  refreshUnfinished();
  syncFromServer();
}

// Another tab submitted or finished something: keep this one's lists current.
window.addEventListener("storage", (event) => {
  if (event.key === STORE_KEY) {
    renderRecentLists();
    renderProgress();
  }
});
