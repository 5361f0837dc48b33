// The problem page's Run buttons: POST /api/runs with the editor's code (and, for Run on my input, the
// custom test's values from its form, sent as JSON values), then the answer under the editor: per test its
// result, expected against got (as the report shows a failed visible test), and what the code printed.
//
// Everything in a run's answer comes from the submission or from what it returned: it goes into the page
// as text (textContent, createElement), never as HTML, but for a failed comparison's details, which the
// server sends drawn (and escaped) by the report page's own template.

import { badge, badgeLabel } from "./common.js";

const SAMPLE_SHOWN = 8;

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A number as the report writes it: six significant digits; NaN and infinities by name. */
export function formatNumber(value) {
  if (typeof value === "number") {
    if (Number.isInteger(value)) return String(value);
    if (!Number.isFinite(value)) return String(value);
    const text = String(Number(value.toPrecision(6)));
    return text === "-0" ? "0" : text;
  }
  if (value === null || value === undefined) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  return String(value);
}

function formatMs(ms) {
  if (typeof ms !== "number") return "";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${Math.round(ms)} ms`;
  return `${ms.toFixed(1)} ms`;
}

function formatShape(shape) {
  if (!Array.isArray(shape)) return String(shape);
  return `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`;
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/** One returned value, described by the server (type, shape, dtype, a sample, or the value), in a line. */
export function describeValue(description) {
  if (!isObject(description)) return "—";
  const parts = [String(description.type ?? "?")];
  if ("shape" in description) parts.push(formatShape(description.shape));
  if ("dtype" in description) parts.push(String(description.dtype));
  if ("length" in description) parts.push(`of length ${description.length}`);
  if (Array.isArray(description.keys)) parts.push(`with keys ${description.keys.join(", ") || "(none)"}`);
  if ("value" in description) {
    const value = description.value;
    parts.push(description.type === "str" ? JSON.stringify(String(value)) : formatNumber(value));
  }
  if (Array.isArray(description.sample)) {
    const shown = description.sample.slice(0, SAMPLE_SHOWN).map(formatNumber).join(", ");
    parts.push(`[${shown}${description.sample.length > SAMPLE_SHOWN ? ", …" : ""}]`);
  }
  return parts.join(" ");
}

function table(className, caption, head, rows) {
  const node = element("table", className);
  node.append(element("caption", "", caption));
  if (head) {
    const tr = element("tr");
    for (const [text, hidden] of head) {
      const th = element("th");
      th.scope = "col";
      if (hidden) th.append(element("span", "visually-hidden", text));
      else th.textContent = text;
      tr.append(th);
    }
    const thead = element("thead");
    thead.append(tr);
    node.append(thead);
  }
  const tbody = element("tbody");
  for (const cells of rows) tbody.append(cells);
  node.append(tbody);
  return node;
}

function codeCell(text, differs = false) {
  const td = element("td", differs ? "differs" : "");
  td.append(element("code", "", text));
  if (differs) {
    const mark = element("span", "diff-mark", " ≠");
    mark.append(element("span", "visually-hidden", " differs"));
    td.append(mark);
  }
  return td;
}

function rowHeader(text) {
  const th = element("th", "", text);
  th.scope = "row";
  return th;
}

/**
 * A failed test's details: the server draws them with the report page's own template (`details_html`,
 * escaped there like the whole report), so that the page and Run show the same thing; parsed into a
 * template element, whose scripts never run, and inserted as nodes.
 */
function comparison(html) {
  const box = element("div", "failure run-failure");
  const template = document.createElement("template");
  template.innerHTML = html;
  box.append(template.content);
  return box;
}

/** Every returned key: what the reference returned against what the code returned. */
function returned(test) {
  const expected = isObject(test.expected) ? test.expected : {};
  const got = isObject(test.got) ? test.got : {};
  const keys = [...new Set([...Object.keys(expected), ...Object.keys(got)])];
  if (!keys.length) return null;
  const rows = keys.map((key) => {
    const tr = element("tr");
    const th = rowHeader("");
    th.append(element("code", "", key));
    tr.append(th, codeCell(key in expected ? describeValue(expected[key]) : "—"));
    tr.append(codeCell(key in got ? describeValue(got[key]) : "—"));
    return tr;
  });
  const wrap = element("div", "table-scroll");
  wrap.tabIndex = 0;
  wrap.setAttribute("role", "group");
  wrap.setAttribute("aria-label", `What ${test.name} returned`);
  wrap.append(table("returned", "Returned", [["Key"], ["Expected"], ["Got"]], rows));
  return wrap;
}

function preformatted(className, label, text) {
  const pre = element("pre", className, text);
  pre.tabIndex = 0;
  pre.setAttribute("role", "group");
  pre.setAttribute("aria-label", label);
  return pre;
}

function lineNote(test) {
  return typeof test.line === "number" ? ` (line ${test.line} of your code)` : "";
}

function renderTest(test, index) {
  const status = typeof test.status === "string" ? test.status : "error";
  const name = typeof test.name === "string" ? test.name : `test ${index + 1}`;
  const item = element("li", `run-test status-${status}`);
  item.dataset.status = status;
  item.dataset.testName = name;
  const head = element("div", "run-test-head");
  head.append(element("span", "run-test-name", name), badge("test", status));
  if (typeof test.time_ms === "number") head.append(element("span", "run-test-time muted small", formatMs(test.time_ms)));
  if (Number.isInteger(test.memory_mb) && test.memory_mb >= 0) {
    const limit = Number.isInteger(test.memory_limit_mb) ? ` of ${test.memory_limit_mb} MB` : "";
    head.append(element("span", "run-test-memory muted small", `${test.memory_mb} MB${limit}`));
  }
  item.append(head);
  // As in the report: a failed comparison's details say what its message says, and more.
  if (status !== "passed" && typeof test.details_html === "string") item.append(comparison(test.details_html));
  else if (status !== "passed" && test.message) {
    item.append(element("p", "run-test-message", `${test.message}${lineNote(test)}`));
  }
  const values = returned({ ...test, name });
  if (values) item.append(values);
  if (test.traceback) {
    const details = element("details", "traceback-details");
    details.append(element("summary", "", "Traceback"), preformatted("traceback", `Traceback of ${name}`, test.traceback));
    item.append(details);
  }
  if (typeof test.output === "string" && test.output !== "") {
    const output = element("div", "test-output");
    output.append(
      element("span", "test-output-label", "Printed output"),
      preformatted("", `Printed output of ${name}`, test.output),
    );
    item.append(output);
  }
  return item;
}

/** Shows a run's answer in the result section; returns the sentence to announce. */
export function renderRun(section, run) {
  const tests = Array.isArray(run.tests) ? run.tests : [];
  const passed = tests.filter((test) => test.status === "passed").length;
  const summary = section.querySelector("[data-run-summary]");
  const status = typeof run.status === "string" ? run.status : "internal_error";
  const count = `${passed} of ${tests.length} test${tests.length === 1 ? "" : "s"} passed`;
  summary.replaceChildren(badge("status", status), element("span", "run-count", count));
  if (run.message) {
    const where = typeof run.line === "number" ? ` (line ${run.line} of your code)` : "";
    summary.append(element("span", "run-message", `${run.message}${where}`));
  }
  const list = section.querySelector("[data-run-tests]");
  list.replaceChildren(...tests.map(renderTest));
  const old = section.querySelector(".run-traceback");
  if (old) old.remove();
  if (run.traceback) section.append(preformatted("traceback run-traceback", "Traceback of the run", run.traceback));
  section.dataset.status = status;
  section.hidden = false;
  return `Run finished: ${badgeLabel("status", status)}, ${count}.`;
}

/** Words for an answer that is not a run: the rate limit, no sandbox, a refusal. */
export function refusal(response, body) {
  const detail = body && typeof body.detail === "string" ? body.detail : `the judge answered ${response.status}`;
  const wait = response.headers.get("Retry-After");
  if (response.status === 429) {
    return `Too many runs for now (${detail}). Try again in ${wait || "a few"} seconds.`;
  }
  if (response.status === 503) {
    return `No sandbox is free to run your code just now. Try again in ${wait || "a few"} seconds.`;
  }
  if (response.status === 413) return `Your code is too large to run: ${detail}.`;
  return `Not run: ${detail}.`;
}

// -- One's own input: the custom test's arguments, sent as JSON values, never as code ------------------

/**
 * The form's values as JSON texts, each checked by JSON.parse (so that what is sent is JSON), kept as the
 * learner typed them: an integer beyond 2^53 reaches the server as written. Returns {texts, errors}.
 */
export function readInputs(form) {
  const texts = [];
  const errors = [];
  for (const box of form.querySelectorAll("[data-argument]")) {
    const name = box.dataset.argument;
    const field = box.querySelector(".custom-value");
    const text = field.value.trim();
    if (box.dataset.type === "bool") {
      texts.push([name, text === "true" ? "true" : "false"]);
      continue;
    }
    try {
      JSON.parse(text);
      texts.push([name, text]);
    } catch {
      const what = box.dataset.type === "tensor" ? "a JSON list, such as [[1, 2], [3, 4]]" : "a number";
      errors.push([name, `${name}: write ${what}`]);
    }
  }
  return { texts, errors };
}

/** The body of a run on one's own input: JSON, with each value's text as typed (already parsed once). */
export function inputsBody(problemId, source, texts) {
  const head = JSON.stringify({ problem_id: problemId, source });
  const inputs = texts.map(([name, text]) => `${JSON.stringify(name)}:${text}`).join(",");
  return `${head.slice(0, -1)},"inputs":{${inputs}}}`;
}

/**
 * A 422's detail split into the errors of each argument ("inputs.NAME...: message") and the rest. The
 * server joins its errors with "; " before each "inputs" (and before "and N more errors").
 */
export function inputErrors(detail, names) {
  const byName = new Map();
  const rest = [];
  for (const part of String(detail).split(/;\s(?=inputs\b|and \d+ more)/)) {
    const match = /^inputs\.([A-Za-z_][A-Za-z0-9_]*)/.exec(part);
    if (match && names.includes(match[1])) {
      if (!byName.has(match[1])) byName.set(match[1], part.slice("inputs.".length));
    } else {
      rest.push(part);
    }
  }
  return { byName, rest };
}

/** Shows each argument's error under its field (and marks the field invalid); clears the others. */
export function showInputErrors(form, byName) {
  let first = null;
  for (const box of form.querySelectorAll("[data-argument]")) {
    const field = box.querySelector(".custom-value");
    const note = box.querySelector("[data-field-error]");
    const message = byName.get(box.dataset.argument);
    note.textContent = message || "";
    note.hidden = !message;
    if (message) {
      field.setAttribute("aria-invalid", "true");
      first = first || field;
    } else {
      field.removeAttribute("aria-invalid");
    }
  }
  return first;
}
