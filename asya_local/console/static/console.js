// The console's live parts: Server-Sent Events from the console's own server (rendered fragments and
// stats as JSON) or, on a task's page, from the gateway with a follow ticket; the flow buttons, and the
// start form's example payloads. Everything else is HTML.
"use strict";

function setStats(stats) {
  for (const [actor, values] of Object.entries(stats)) {
    for (const holder of document.querySelectorAll(`[data-actor="${CSS.escape(actor)}"]`)) {
      for (const [name, value] of Object.entries(values)) {
        const cell = holder.querySelector(`[data-stat="${name}"]`);
        if (cell) cell.textContent = name === "per_minute" ? Number(value).toFixed(1) : String(value);
      }
      holder.classList.toggle("busy", values.visible + values.in_flight > 0);
      holder.classList.toggle("failing", values.failed > 0);
    }
  }
}

function setRoute(classes) {
  for (const node of document.querySelectorAll("#graph .node")) {
    node.classList.remove("route-visited", "route-current", "route-next", "route-failed", "route-paused");
    const where = classes[node.dataset.actor];
    if (where) node.classList.add(`route-${where}`);
  }
  if (document.querySelector("#graph[data-program]")) return; // a program's steps taken come as `steps`
  for (const edge of document.querySelectorAll("#graph .edge")) {
    const source = classes[edge.dataset.source];
    edge.classList.toggle("route-taken", source === "visited" && Boolean(classes[edge.dataset.target]));
  }
}

// A task of a program flow: each step it took ("source target" → times), a loop's repeats counted.
function setSteps(taken) {
  for (const edge of document.querySelectorAll("#graph .edge")) {
    const times = taken[`${edge.dataset.source} ${edge.dataset.target}`] || 0;
    edge.classList.toggle("route-taken", times > 0);
    edge.dataset.taken = String(times);
  }
  for (const label of document.querySelectorAll("#graph .mark text.times")) {
    const times = taken[`${label.parentNode.dataset.source} ${label.parentNode.dataset.target}`] || 0;
    label.textContent = times > 1 ? `×${times}` : "";
  }
}

// A field's identity across re-renders: its form's action and its name.
function fieldKey(field) {
  return `${field.form ? field.form.getAttribute("action") : ""} ${field.name}`;
}

function edited(field) {
  if ("typed" in field.dataset) return true; // what a refused resume gave back, as the person typed it
  if (field.type === "checkbox") return field.checked !== field.defaultChecked;
  if (field.tagName === "SELECT") return [...field.options].some((option) => option.selected !== option.defaultSelected);
  return field.value !== field.defaultValue;
}

// Every status event re-renders the task's state (the first comes as the page connects), and with it
// the resume form: what the user typed there, and where they were typing, must survive it.
function replaceKeepingInput(holder, html) {
  const typed = new Map();
  for (const field of holder.querySelectorAll("input[name], textarea[name], select[name]")) {
    if (edited(field)) typed.set(fieldKey(field), field.type === "checkbox" ? field.checked : field.value);
  }
  const focused = holder.contains(document.activeElement) ? document.activeElement : null;
  const focusKey = focused && focused.name ? fieldKey(focused) : null;
  // where the caret (or the selection) was: setting a field's value moves the caret to its end, so a
  // status event arriving while someone types would otherwise send their next keys to the end
  const selection = focused && typeof focused.selectionStart === "number"
    ? [focused.selectionStart, focused.selectionEnd, focused.selectionDirection] : null;
  holder.innerHTML = html;
  for (const field of holder.querySelectorAll("input[name], textarea[name], select[name]")) {
    const key = fieldKey(field);
    if (typed.has(key)) {
      if (field.type === "checkbox") field.checked = typed.get(key);
      else field.value = typed.get(key);
    }
    if (key === focusKey) {
      field.focus();
      if (selection && typeof field.setSelectionRange === "function") {
        try { field.setSelectionRange(...selection); } catch (_) { /* a field kind without a caret */ }
      }
    }
  }
}

// Times come as UTC stamps; each is shown in the reader's local time, the stamp on hover (its title).
function localTimes(root) {
  for (const time of root.querySelectorAll("time[data-local]")) {
    const when = new Date(time.getAttribute("datetime"));
    if (!Number.isNaN(when.getTime())) time.textContent = when.toLocaleString();
  }
  // a chart's hover: "10:05 UTC · 3 processed", its bucket's start in the reader's zone instead
  for (const hit of root.querySelectorAll("rect.hit[data-start]")) {
    const title = hit.querySelector("title");
    const start = new Date(Number(hit.dataset.start) * 1000);
    const local = start.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    if (title) title.textContent = title.textContent.replace(/^\d\d:\d\d UTC/, local);
  }
}

// What each event of a page's stream does: the console's own (`follow`) and, on a task's page, the
// fragments fetched at each of the gateway's status events (`followTask`).
const shows = {
  stats: (data) => setStats(JSON.parse(data)),
  tasks: (data) => {
    const rows = document.getElementById("task-rows");
    if (rows) {
      rows.innerHTML = data;
      localTimes(rows);
    }
  },
  pager: (data) => {
    const pager = document.getElementById("task-pager");
    if (pager) pager.innerHTML = data;
  },
  task: (data) => {
    const state = document.getElementById("task-state");
    if (state) {
      replaceKeepingInput(state, data);
      localTimes(state);
    }
  },
  why: (data) => {
    const why = document.getElementById("task-why");
    if (why) why.innerHTML = data;
  },
  route: (data) => setRoute(JSON.parse(data)),
  steps: (data) => setSteps(JSON.parse(data)),
  fly: (data) => showFly(JSON.parse(data)),
};

// A FLY event as the gateway logs it ({actor, data, ...}): its actor, and what it sent, as text.
function showFly(event) {
  const list = document.getElementById("fly");
  if (!list) return;
  const item = document.createElement("li");
  const actor = document.createElement("span");
  actor.className = "fly-actor";
  actor.textContent = event.actor || "";
  const sent = document.createElement("code");
  sent.textContent = typeof event.data === "string" ? event.data : JSON.stringify(event.data);
  item.append(actor, " ", sent);
  list.append(item);
}

function follow(url) {
  const source = new EventSource(url);
  for (const [name, show] of Object.entries(shows)) source.addEventListener(name, (event) => show(event.data));
  source.addEventListener("end", () => source.close());
  return source;
}

// A task's page whose origin the gateway allows: the task's events straight from the gateway, opened
// with the follow ticket the console got for the page (`data-follow`). At each status event the page
// fetches the task's fragments from the console, one fetch after the other, and stops at `end`. A
// ticket lapses after five minutes: when the gateway refuses the stream the page asks the console for
// a new one and goes on after the last event it had; if that fails too, the console relays the events.
function followTask(page) {
  let source = null;
  let lastEventId = "";
  let shown = Promise.resolve();
  let ended = false;
  let renewals = 0;
  const open = (url) => {
    source = new EventSource(lastEventId ? `${url}&cursor=${encodeURIComponent(lastEventId)}` : url);
    source.addEventListener("fly", (event) => {
      lastEventId = event.lastEventId || lastEventId;
      renewals = 0;
      shows.fly(event.data);
    });
    source.addEventListener("status", (event) => {
      lastEventId = event.lastEventId || lastEventId;
      renewals = 0;
      shown = shown.then(showFragments).catch(() => undefined);
    });
    source.addEventListener("error", () => {
      if (ended || source.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
      renew();
    });
  };
  const showFragments = async () => {
    if (ended) return;
    const answer = await fetch(page.dataset.followLive, { credentials: "same-origin" });
    for (const [name, data] of await answer.json()) {
      if (name === "end") {
        ended = true;
        source.close();
      } else if (shows[name]) {
        shows[name](data);
      }
    }
  };
  const renew = async () => {
    renewals += 1;
    const answer = renewals <= 3 ? await fetch(page.dataset.followTicket, { credentials: "same-origin" }) : null;
    const ticket = answer && answer.ok ? await answer.json() : null;
    if (ticket && ticket.follow_url) open(ticket.follow_url);
    else follow(page.dataset.followRelay);
  };
  open(page.dataset.follow);
}

// A payload's box (`data-fit`): every line of it shown, and one to type on (4 to 24 rows, as the page
// renders it: `rows_for`), never its last line clipped below the box.
function fitRows(textarea) {
  textarea.rows = Math.min(24, Math.max(4, textarea.value.split("\n").length + 1));
}

function showFlow(button) {
  const pressed = button.getAttribute("aria-pressed") !== "true";
  for (const other of document.querySelectorAll("button.flow")) other.setAttribute("aria-pressed", "false");
  button.setAttribute("aria-pressed", String(pressed));
  const flow = pressed ? button.dataset.flow : null;
  const graph = document.getElementById("graph");
  graph.classList.toggle("one-flow", Boolean(flow));
  for (const edge of graph.querySelectorAll(".edge")) {
    edge.classList.toggle("on", Boolean(flow) && edge.dataset.flows.split(" ").includes(flow));
  }
  const onPath = new Set();
  for (const edge of graph.querySelectorAll(".edge.on")) {
    onPath.add(edge.dataset.source);
    onPath.add(edge.dataset.target);
  }
  for (const node of graph.querySelectorAll(".node")) node.classList.toggle("on", onPath.has(node.dataset.actor));
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  // A date and time typed without a zone is the reader's: the form says which zone that is.
  for (const zone of document.querySelectorAll("input[data-zone]")) {
    if (!zone.value) zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  }
  for (const live of document.querySelectorAll("[data-live]")) follow(live.dataset.live);
  for (const page of document.querySelectorAll("[data-follow]")) followTask(page);
  const route = document.querySelector("[data-route]");
  if (route) setRoute(JSON.parse(route.dataset.route));
  for (const button of document.querySelectorAll("button.flow")) {
    button.addEventListener("click", () => showFlow(button));
  }
  // on the document: a task's state, the run-again form with it, is re-rendered by its live events
  document.addEventListener("input", (event) => {
    if (event.target.matches("textarea[data-fit]")) fitRows(event.target);
  });
  const flow = document.getElementById("flow");
  const payload = document.getElementById("payload");
  if (flow && payload && flow.closest("form.start")) {
    flow.addEventListener("change", () => {
      const example = flow.selectedOptions[0].dataset.example;
      payload.value = JSON.stringify(JSON.parse(example || "{}"), null, 2);
      fitRows(payload);
    });
  }
});
