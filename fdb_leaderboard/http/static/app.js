// The live leaderboard page: plain JavaScript over the HTTP API (no build step, nothing fetched
// from elsewhere).  State lives in the URL's hash (#index=…&type=…&n=…&record=…) so a view can be
// linked to.  The top of the board comes from a Server-Sent Events stream that sends it again
// whenever it changes; the record panel is refreshed with it.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { index: "", type: null, n: 10, record: "" };
let stream = null;  // the AbortController of the board's stream
let previous = new Map();
let shown = [];

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  state.index = params.get("index") || "";
  state.type = params.has("type") ? Number(params.get("type")) : null;
  state.n = Number(params.get("n") || 10);
  state.record = params.get("record") || "";
}

function writeHash() {
  const params = new URLSearchParams({ index: state.index, type: String(state.type), n: String(state.n) });
  if (state.record) params.set("record", state.record);
  history.replaceState(null, "", "#" + params.toString());
}

// With tokens configured on the server, calls need a bearer token: asked for on a 401 or 403 and
// kept for this tab only.
function authHeaders() {
  const token = sessionStorage.getItem("fdb-leaderboard-token");
  return token ? { Authorization: `Bearer ${token}` } : {};
}

function askForToken() {
  $("auth").hidden = false;
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

function showError(message) {
  $("error").hidden = !message;
  $("error").textContent = message || "";
}

function boardPath() {
  return `/v1/indexes/${encodeURIComponent(state.index)}/windows/${state.type}`;
}

function windowQuery() {
  return state.type === 0 ? "" : "at=now";  // today's, this week's...: the window holding the server's clock
}

const SECOND_PERIODS = { 3600: "This hour", 86400: "Today", 604800: "This week" };

function windowLabel(type, windows) {
  if (type === 0) return "All time";
  const sample = windows.find((w) => w.type === type);
  let length = Number(sample.end) - Number(sample.start);
  if (length % 1000 === 0 && SECOND_PERIODS[length / 1000]) length /= 1000;  // a millisecond timebase
  if (SECOND_PERIODS[length]) return SECOND_PERIODS[length];
  if (length >= 28 * 86400 && length <= 31 * 86400) return "This month";
  return `Type ${type}`;
}

function recordText(pk) {
  return pk.length === 1 && typeof pk[0] === "string" ? pk[0] : JSON.stringify(pk);
}

function whenText(ts) {
  const t = Number(ts);
  if (t >= 1e9 && t < 1e11) return new Date(t * 1000).toLocaleString();
  if (t >= 1e12 && t < 1e14) return new Date(t).toLocaleString();
  return String(ts);
}

function fillRows(tbody, entries, highlight) {
  const rows = entries.map((e) => {
    const tr = document.createElement("tr");
    const name = recordText(e.pk);
    const key = JSON.stringify(e.pk);
    if (highlight && name === highlight) tr.classList.add("me");
    if (tbody.id === "top-body" && previous.size && previous.get(key) !== `${e.rank}:${e.score}`) tr.classList.add("changed");
    for (const [text, cls] of [[e.rank + 1, "num"], [name, "name"], [e.score, "num"], [whenText(e.timestamp), "when"]]) {
      const td = document.createElement("td");
      td.textContent = String(text);
      td.className = cls;
      tr.appendChild(td);
    }
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

async function refreshSide() {
  const query = windowQuery();
  try {
    const counted = await getJSON(`${boardPath()}/count${query ? "?" + query : ""}`);
    $("count").textContent = `${counted.count} records`;
  } catch (error) {
    $("count").textContent = "";
  }
  await lookUp();
}

async function lookUp() {
  const record = state.record;
  if (!record) {
    $("rank").textContent = "";
    $("around").hidden = true;
    return;
  }
  const base = `${boardPath()}/records/${encodeURIComponent(record)}`;
  const query = windowQuery();
  try {
    const mine = await getJSON(`${base}/rank${query ? "?" + query : ""}`);
    $("rank").textContent = `${recordText(mine.pk)} is #${mine.rank + 1} with ${mine.score}`;
    const around = await getJSON(`${base}/around?above=2&below=2${query ? "&" + query : ""}`);
    fillRows($("around").tBodies[0], around.entries, recordText(mine.pk));
    $("around").hidden = false;
  } catch (error) {
    $("around").hidden = true;
    $("rank").textContent = error.status === 404 ? `${record} has no score in this window.` : error.message;
  }
}

function onBoard(event, body) {
  if (event === "problem") {
    showError(body.message);
    return;
  }
  showError("");
  $("status").textContent = `live · updated ${new Date().toLocaleTimeString()}`;
  $("status").className = "live";
  renderTop(body.entries);
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

async function subscribe() {
  if (stream) stream.abort();
  if (!state.index || state.type === null) return;
  const controller = new AbortController();
  stream = controller;
  const query = [windowQuery(), `n=${state.n}`].filter(Boolean).join("&");
  const url = `${boardPath()}/top/events?${query}`;
  $("status").textContent = "connecting…";
  $("status").className = "";
  while (!controller.signal.aborted) {
    try {
      await listen(url, controller.signal);  // ends after a while: listen again at once
    } catch (error) {
      if (controller.signal.aborted) return;
      showError(error.message);
      $("status").textContent = "not live: retrying";
      $("status").className = "";
      if (error.status === 401 || error.status === 403) askForToken();
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }
}

async function loadWindows() {
  const listing = await getJSON(`/v1/indexes/${encodeURIComponent(state.index)}/windows`);
  const types = [...new Set(listing.windows.map((w) => w.type))].sort((a, b) => (a === 0) - (b === 0) || a - b);
  const select = $("window");
  select.replaceChildren(
    ...types.map((type) => new Option(`${windowLabel(type, listing.windows)}`, String(type)))
  );
  if (!types.includes(state.type)) state.type = types.length ? types[0] : null;
  select.value = String(state.type);
  $("board-title").textContent = state.type === null ? "No windows yet" : select.selectedOptions[0].textContent;
}

async function choose() {
  state.n = Number($("size").value);
  writeHash();
  try {
    await loadWindows();
    writeHash();
    subscribe();
  } catch (error) {
    showError(error.message);
  }
}

async function start() {
  readHash();
  $("size").value = String(state.n);
  $("record").value = state.record;
  try {
    const { indexes } = await getJSON("/v1/indexes");
    const names = indexes.map((i) => i.name);
    $("index").replaceChildren(...names.map((name) => new Option(name, name)));
    if (!names.includes(state.index)) state.index = names[0] || "";
    $("index").value = state.index;
    if (!names.length) {
      $("status").textContent = "no index yet: create one";
      return;
    }
  } catch (error) {
    showError(error.message);
    if (error.status === 401 || error.status === 403) askForToken();
    return;
  }
  await choose();
}

$("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("fdb-leaderboard-token", $("token").value.trim());
  $("auth").hidden = true;
  showError("");
  start();
});

$("index").addEventListener("change", () => {
  state.index = $("index").value;
  state.type = null;
  choose();
});
$("window").addEventListener("change", () => {
  state.type = Number($("window").value);
  $("board-title").textContent = $("window").selectedOptions[0].textContent;
  writeHash();
  subscribe();
});
$("size").addEventListener("change", choose);
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
