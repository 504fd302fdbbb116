// The live leaderboard page: plain JavaScript over the HTTP API (no build step, nothing fetched
// from elsewhere).  State lives in the URL's hash (#index=…&type=…&group=…&n=…&record=…) so a view
// can be linked to.  The top of the board comes from a Server-Sent Events stream that sends it
// again whenever it changes; the record panel is refreshed with it.
//
// Ranks: the API's `rank` is 0-based; people read `#1` for the best (rank 0), as in the CLI.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { index: "", type: null, group: "", at: "", n: 10, record: "" };
let indexes = [];  // the server's indexes (ListIndexes)
let info = null;  // the chosen index's IndexInfo (options, maintenance policy)
let windows = [];  // the chosen index's windows (ListWindows)
let currentStart = null;  // the start of the board type's window holding the server's clock, once seen
let stream = null;  // the AbortController of the board's stream
let previous = new Map();
let shown = [];
const DISPLAY_FIELD = "name";  // the metadata field shown as a record's name
const RETRY_MS = 3000;

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  state.index = params.get("index") || "";
  state.type = params.has("type") ? Number(params.get("type")) : null;
  state.group = params.get("group") || "";
  state.at = params.get("at") || "";
  state.n = Number(params.get("n") || 10);
  state.record = params.get("record") || "";
}

function writeHash() {
  const params = new URLSearchParams({ index: state.index, type: String(state.type), n: String(state.n) });
  if (state.group) params.set("group", state.group);
  if (state.at) params.set("at", state.at);
  if (state.record) params.set("record", state.record);
  history.replaceState(null, "", "#" + params.toString());
}

// With tokens configured on the server, calls need a bearer token: asked for on a 401 or 403 and
// kept for this tab only.
function authHeaders() {
  const token = sessionStorage.getItem("fdb-leaderboard-token");
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function failure(response) {
  const body = await response.json().catch(() => ({ message: response.statusText }));
  const error = new Error(body.message || response.statusText);
  error.status = response.status;
  error.code = body.code;
  throw error;
}

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json", ...authHeaders() } });
  if (!response.ok) await failure(response);
  return response.json();
}

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json", ...authHeaders() },
    body: JSON.stringify(body),
  });
  if (!response.ok) await failure(response);
  return response.json();
}

function showError(message) {
  $("error").hidden = !message;
  $("error").textContent = message || "";
}

function setStatus(text, live = false) {
  $("status").textContent = text;
  $("status").className = live ? "live" : "";
}

// A refusal that asking again cannot change (a bad request, a missing index or window, a token
// refused): said once, with what to do, and not retried.  Anything else (the server restarting,
// overloaded, a window still filling) is retried every few seconds.
function isFinal(error) {
  return [400, 401, 403, 404, 405, 413, 415].includes(error.status);
}

function advice(error) {
  if (error.status === 401 || error.status === 403) {
    return "This server needs a bearer token (serve --tokens): paste one of its tokens above.";
  }
  if (error.status === 404 && /no window of type/.test(error.message)) {
    return "No window of this type holds the server's time: its windows ended or start later " +
      "(the maintenance policy keeps them ahead: fdb-leaderboard policy set). Choose an earlier period or another board.";
  }
  return "";
}

function showFailure(error) {
  const hint = advice(error);
  showError(hint ? `${error.message}. ${hint}` : error.message);
  if (error.status === 401 || error.status === 403) {
    $("auth").hidden = false;
    setStatus("a token is needed");
  }
}

function boardPath() {
  return `/v1/indexes/${encodeURIComponent(state.index)}/windows/${state.type}`;
}

function boardQuery(extra = []) {
  const parts = [...extra];
  // Today's, this week's...: the window holding the server's clock; or a past one (by its start).
  if (state.type !== 0) parts.push(`at=${state.at || "now"}`);
  if (state.group) parts.push(`group=${encodeURIComponent(state.group)}`);
  return parts.length ? "?" + parts.join("&") : "";
}

// -- windows: names, dates and time zones -----------------------------------------------------------

const CALENDAR_LABELS = { daily: "Today", "iso-weekly": "This week", monthly: "This month" };
const SECOND_PERIODS = { 3600: "This hour", 86400: "Today", 604800: "This week" };
const PREVIOUS = { Today: "Yesterday", "This week": "Last week", "This month": "Last month", "This hour": "Last hour" };

function calendarOf(type) {
  const calendar = (info && info.maintenance && info.maintenance.calendar) || [];
  return calendar.find((c) => c.type === type) || null;
}

function timeUnit() {  // milliseconds per unit of the index's times
  return info && info.maintenance && info.maintenance.timebase === "milliseconds" ? 1 : 1000;
}

function windowLabel(type, windows) {
  if (type === 0) return "All time";
  const calendar = calendarOf(type);
  if (calendar && CALENDAR_LABELS[calendar.period]) return CALENDAR_LABELS[calendar.period];
  const sample = windows.find((w) => w.type === type);
  const length = (Number(sample.end) - Number(sample.start)) * timeUnit() / 1000;
  if (SECOND_PERIODS[length]) return SECOND_PERIODS[length];
  if (length >= 28 * 86400 && length <= 31 * 86400) return "This month";
  return `Type ${type}`;
}

// One time zone per board, stated once (on its dates line), in which its dates and its rows'
// times are shown: its calendar's; for the all-time board or windows of fixed length, the one
// the index's calendar boards share, else the reader's own.
function zoneOf(type) {
  const calendar = calendarOf(type);
  if (calendar) return calendar.timezone || "UTC";
  const zones = [...new Set(((info && info.maintenance && info.maintenance.calendar) || []).map((c) => c.timezone || "UTC"))];
  return zones.length === 1 ? zones[0] : Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

function windowText(window, withZone = true) {
  if (!window || window.type === 0) {
    const type = window ? window.type : state.type;
    return withZone ? `every score ever submitted (times in ${zoneOf(type || 0)})` : "every score ever submitted";
  }
  const zone = zoneOf(window.type);
  const unit = timeUnit();
  const start = new Date(Number(window.start) * unit);
  const last = new Date(Number(window.end) * unit - 1);  // the end is exclusive
  const day = { timeZone: zone, year: "numeric", month: "short", day: "numeric" };
  const time = { timeZone: zone, hour: "2-digit", minute: "2-digit" };
  const dayOf = (d) => d.toLocaleDateString(undefined, day);
  const sameDay = dayOf(start) === dayOf(last);
  let text = `${dayOf(start)} – ${dayOf(last)}`;
  if (sameDay && (Number(window.end) - Number(window.start)) * unit >= 23 * 3600 * 1000) text = dayOf(start);
  else if (sameDay) text = `${dayOf(start)} ${start.toLocaleTimeString(undefined, time)} – ${last.toLocaleTimeString(undefined, time)}`;
  return withZone ? `${text} (${zone})` : text;
}

// The period picker: the current window, then the earlier windows of the type, latest first
// (all of them, by date, while the current one is unknown: none holds the server's clock).  Only
// the window that ends where the current one starts is "Yesterday" (or "Last week"...): an older
// one is named by its dates.
function fillPeriods() {
  const select = $("period");
  $("period-choice").hidden = state.type === 0 || state.type === null;
  if ($("period-choice").hidden) {
    showTitle();
    return;
  }
  const label = boardLabel();
  const ofType = windows.filter((w) => w.type === state.type).sort((a, b) => Number(b.start) - Number(a.start));
  const past = currentStart === null ? ofType : ofType.filter((w) => Number(w.start) < currentStart);
  const name = (w) => (currentStart !== null && Number(w.end) === currentStart && PREVIOUS[label] ? PREVIOUS[label] : windowText(w, false));
  select.replaceChildren(new Option(label, ""), ...past.map((w) => new Option(name(w), String(w.start))));
  select.value = state.at;
  if (select.value !== state.at) {  // a window no longer listed (expired): still shown as asked
    select.value = "";
  }
  showTitle();
}

function boardLabel() {
  return $("window").selectedOptions[0] ? $("window").selectedOptions[0].textContent : "Current";
}

// The board's title names the period shown: the board's ("Today") for the current window, the
// picker's name of a past one ("Yesterday", or its dates).
function showTitle() {
  if (state.type === null) return;
  const picked = state.at && $("period").selectedOptions[0] && $("period").value === state.at;
  let title = boardLabel();
  if (state.at) {
    const past = windows.find((w) => w.type === state.type && String(w.start) === state.at);
    title = picked ? $("period").selectedOptions[0].textContent : past ? windowText(past, false) : `From ${state.at}`;
  }
  $("board-title").textContent = title;
}

// Movement: each row's rank in the window before the one shown (the one holding its start minus
// one, as the API's movement reads it), in one GetRanks call: places gained, or "new".
async function showMovement(entries, window) {
  const cells = [...$("top").tBodies[0].rows].map((row) => row.cells[4]);
  const clear = () => cells.forEach((cell) => { cell.textContent = ""; });
  const before = window ? Number(window.start) - 1 : 0;
  const listed = window && windows.some((w) => w.type === window.type && Number(w.start) <= before && before < Number(w.end));
  if (!listed || window.type === 0 || !entries.length) {  // no window before this one: no movement
    clear();
    return;
  }
  const body = {
    index: state.index,
    records: entries.map((e) => ({ pk: e.pk })),  // the one JSON shape: plain key items
    window: { type: window.type, timestamp: before },
    group: state.group ? [].concat(groupItems(state.group)) : [],
  };
  try {
    const { ranks } = await postJSON("/v1/GetRanks", body);
    entries.forEach((e, i) => {
      const slot = ranks[i] || {};
      const cell = cells[i];
      if (!cell) return;
      if (!slot.entry) {
        cell.textContent = "new";
        cell.className = "move new";
        return;
      }
      const change = Number(slot.entry.rank || 0) - e.rank;
      cell.textContent = change > 0 ? `▲${change}` : change < 0 ? `▼${-change}` : "=";
      cell.className = change > 0 ? "move up" : change < 0 ? "move down" : "move";
    });
  } catch (error) {
    clear();  // it went meanwhile (404), or cannot be read now
  }
}

// -- rows -------------------------------------------------------------------------------------------

function keyText(pk) {
  return pk.length === 1 && typeof pk[0] === "string" ? pk[0] : JSON.stringify(pk);
}

function displayName(entry) {
  return (entry.metadata && entry.metadata[DISPLAY_FIELD]) || "";
}

// A row's time, in the board's one time zone (named once, on its dates line).
function whenText(ts) {
  const t = Number(ts) * timeUnit();
  if (t < 1e12 || t >= 1e14) return String(ts);
  const options = { timeZone: zoneOf(state.type || 0), year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" };
  return new Date(t).toLocaleString(undefined, options);
}

function rankText(rank) {
  return `#${rank + 1}`;
}

function recordCell(entry) {
  const td = document.createElement("td");
  td.className = "name";
  const name = displayName(entry);
  const key = keyText(entry.pk);
  if (name && name !== key) {
    const shownName = document.createElement("span");
    shownName.className = "display";
    shownName.textContent = name;
    const small = document.createElement("small");
    small.className = "key";
    small.textContent = key;
    td.append(shownName, " ", small);
  } else {
    td.textContent = key;
  }
  return td;
}

function fillRows(tbody, entries, highlight) {
  const rows = entries.map((e) => {
    const tr = document.createElement("tr");
    const key = JSON.stringify(e.pk);
    if (highlight && keyText(e.pk) === highlight) tr.classList.add("me");
    if (tbody.id === "top-body" && previous.size && previous.get(key) !== `${e.rank}:${e.score}`) tr.classList.add("changed");
    const cell = (text, cls) => {
      const td = document.createElement("td");
      td.textContent = String(text);
      td.className = cls;
      return td;
    };
    tr.append(cell(rankText(e.rank), "num rank"), recordCell(e), cell(e.score, "num"), cell(whenText(e.timestamp), "when"));
    if (tbody.id === "top-body") tr.append(cell("", "move"));
    return tr;
  });
  tbody.replaceChildren(...rows);
}

function renderTop(entries) {
  const tbody = $("top").tBodies[0];
  tbody.id = "top-body";
  fillRows(tbody, entries, state.record);
  previous = new Map(entries.map((e) => [JSON.stringify(e.pk), `${e.rank}:${e.score}`]));
  shown = entries;
  $("empty").hidden = entries.length > 0;
}

function plural(count, one, many) {
  return `${count} ${Number(count) === 1 ? one : many}`;
}

async function refreshSide() {
  try {
    const counted = await getJSON(`${boardPath()}/count${boardQuery()}`);
    $("count").textContent = plural(counted.count, "record", "records");
  } catch (error) {
    $("count").textContent = "";
  }
  await lookUp();
}

async function lookUp() {
  const record = state.record;
  if (!record || !boardReady()) {
    $("rank").textContent = "";
    $("around").hidden = true;
    return;
  }
  const base = `${boardPath()}/records/${encodeURIComponent(record)}`;
  try {
    const mine = await getJSON(`${base}/rank${boardQuery()}`);
    const name = displayName(mine);
    $("rank").textContent = `${keyText(mine.pk)}${name ? ` (${name})` : ""} is ${rankText(mine.rank)} with ${mine.score}`;
    const around = await getJSON(`${base}/around${boardQuery(["above=2", "below=2"])}`);
    fillRows($("around").tBodies[0], around.entries, keyText(mine.pk));
    $("around").hidden = false;
  } catch (error) {
    $("around").hidden = true;
    $("rank").textContent = error.status === 404 ? `${record} has no score in this window.` : error.message;
  }
}

function onBoard(event, body) {
  if (event === "problem") {
    showError(body.message);
    setStatus("not live: the board cannot be read");
    return;
  }
  showError("");
  setStatus(`live · updated ${new Date().toLocaleTimeString()}`, true);
  $("window-dates").textContent = windowText(body.window || { type: state.type });
  if (state.at === "" && body.window && Number(body.window.start) !== currentStart) {
    currentStart = Number(body.window.start);  // a new day (or week...) began: the picker follows
    fillPeriods();
  }
  renderTop(body.entries);
  showMovement(body.entries, body.window);
  refreshSide();
}

// Server-Sent Events read through fetch (not EventSource, which cannot send the bearer token).
async function listen(url, signal) {
  const response = await fetch(url, { headers: authHeaders(), signal });
  if (!response.ok) await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onBoard(event, JSON.parse(data.join("\n")));
    }
  }
}

function groupSize() {
  return (info && info.options && info.options.group_size) || 0;
}

function boardReady() {
  return state.index && state.type !== null && (groupSize() === 0 || state.group);
}

async function subscribe() {
  if (stream) stream.abort();
  stream = null;
  renderTop([]);
  $("empty").hidden = true;
  $("count").textContent = "";
  $("window-dates").textContent = "";
  fillPeriods();
  if (!boardReady()) return;
  const controller = new AbortController();
  stream = controller;
  const url = `${boardPath()}/top/events${boardQuery([`n=${state.n}`])}`;
  setStatus("connecting…");
  while (!controller.signal.aborted) {
    try {
      await listen(url, controller.signal);  // ends after a while: listen again at once
    } catch (error) {
      if (controller.signal.aborted) return;
      showFailure(error);
      if (isFinal(error)) {
        if (error.status !== 401 && error.status !== 403) setStatus("not live: see below");
        return;
      }
      setStatus("not live: retrying");
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

// -- choosing the index, the board and the group ----------------------------------------------------

function groupItems(text) {
  if (!text.startsWith("[")) return [text];
  try {
    return JSON.parse(text);
  } catch (error) {
    return null;
  }
}

// The groups offered: the first GROUP_PAGE of those holding scores in the board's window (a skip-scan
// on the server, one read per group); any other group can be typed.
const GROUP_PAGE = 200;

async function loadGroups() {
  const size = groupSize();
  $("group-choice").hidden = size === 0;
  if (size === 0) {
    state.group = "";
    return;
  }
  $("group").value = state.group;
  let known = [];
  let more = false;
  try {
    const at = state.type !== 0 ? `&at=${state.at || "now"}` : "";
    const listing = await getJSON(`${boardPath()}/groups?limit=${GROUP_PAGE}${at}`);
    known = listing.groups.map((g) => itemsText(g.group));
    more = Boolean(listing.continuation);
  } catch (error) {
    known = [];  // no such window (said by the board itself), or not readable now
  }
  $("groups").replaceChildren(...known.map((g) => new Option(g, g)));
  $("group").placeholder = known.length ? `${plural(known.length, "group", "groups")}${more ? "+" : ""} with scores` : "e.g. eu";
  if (!state.group && known.length) state.group = known[0];
  $("group").value = state.group;
  if (!state.group) {
    setStatus("choose a group");
    showError(`This index has a board per group (${plural(size, "key element", "key elements")}) and no group ` +
      "has scores in this window: type a group above (one string, or a JSON array for several elements).");
  }
}

function itemsText(values) {
  return values.length === 1 && typeof values[0] === "string" ? values[0] : JSON.stringify(values);
}

async function loadWindows() {
  const listing = await getJSON(`/v1/indexes/${encodeURIComponent(state.index)}/windows`);
  windows = listing.windows;
  const types = [...new Set(listing.windows.map((w) => w.type))].sort((a, b) => (a === 0) - (b === 0) || a - b);
  const select = $("window");
  select.replaceChildren(...types.map((type) => new Option(windowLabel(type, listing.windows), String(type))));
  if (!types.includes(state.type)) state.type = types.length ? types[0] : null;
  select.value = String(state.type);
  if (state.type === null) $("board-title").textContent = "No windows yet";
  else showTitle();
  if (state.type === null) {
    setStatus("no windows: nothing to show");
    showError(`Index ${state.index} has no windows, so no board to show. Add some: ` +
      `"fdb-leaderboard windows apply ${state.index} FILE" (see examples/windows.yaml in the README).`);
  }
}

async function choose() {
  state.n = Number($("size").value);
  showError("");
  try {
    info = indexes.find((i) => i.name === state.index) || null;
    await loadWindows();
    if (state.type !== null) await loadGroups();
    writeHash();
    subscribe();
  } catch (error) {
    showFailure(error);
    setStatus("not live: see below");
  }
}

async function start() {
  readHash();
  $("size").value = String(state.n);
  $("record").value = state.record;
  showError("");
  try {
    indexes = (await getJSON("/v1/indexes")).indexes;
  } catch (error) {
    showFailure(error);
    if (!isFinal(error)) {
      setStatus("not connected: retrying");
      setTimeout(start, RETRY_MS);
    }
    return;
  }
  const names = indexes.map((i) => i.name);
  $("index").replaceChildren(...names.map((name) => new Option(name, name)));
  if (!names.includes(state.index)) state.index = names[0] || "";
  $("index").value = state.index;
  if (!names.length) {
    setStatus("no index yet");
    showError('This server has no index yet: create one, e.g. "fdb-leaderboard index create game --daily".');
    return;
  }
  await choose();
}

$("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("fdb-leaderboard-token", $("token").value.trim());
  $("auth").hidden = true;
  start();
});

$("choose").addEventListener("submit", (event) => event.preventDefault());  // Enter in the group field
$("index").addEventListener("change", () => {
  state.index = $("index").value;
  state.type = null;
  state.group = "";
  state.at = "";
  currentStart = null;
  choose();
});
$("period").addEventListener("change", async () => {
  state.at = $("period").value;
  await loadGroups();  // the groups with scores in this period
  writeHash();
  subscribe();
});
$("window").addEventListener("change", async () => {
  state.type = Number($("window").value);
  state.at = "";
  currentStart = null;
  showTitle();
  await loadGroups();
  writeHash();
  subscribe();
});
$("group").addEventListener("change", () => {
  const text = $("group").value.trim();
  if (groupItems(text) === null) {
    showError(`${text} is not a JSON array: write one string, or a JSON array such as ["eu", 3]`);
    return;
  }
  state.group = text;
  showError("");
  writeHash();
  subscribe();
});
$("size").addEventListener("change", () => {
  state.n = Number($("size").value);
  writeHash();
  subscribe();
});
$("find").addEventListener("submit", (event) => {
  event.preventDefault();
  state.record = $("record").value.trim();
  writeHash();
  lookUp();
  renderTop(shown);  // highlight the record if it is on the board
});
// A link or an edited address that changes the hash switches the view (the page's own updates
// use replaceState, which fires no hashchange).
window.addEventListener("hashchange", start);

start();
