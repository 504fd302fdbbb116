// The API's documentation, rendered in the browser from the server's own /openapi.json (no
// third-party viewer, nothing fetched from elsewhere: it works offline).
"use strict";

const $ = (id) => document.getElementById(id);

function element(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

function schemaText(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.enum) return schema.enum.join(" | ");
  if (schema.oneOf) return schema.oneOf.map(schemaText).join(" or ");
  return [].concat(schema.type || "any").join(" or ");
}

function operationCard(path, method, operation) {
  const card = element("section", undefined, "operation");
  card.id = operation.operationId || `${method} ${path}`;
  const title = element("h2");
  title.append(element("span", method.toUpperCase(), `method ${method}`), " ", element("code", path));
  card.append(title, element("p", operation.summary || ""));
  if (operation.description) card.append(element("p", operation.description, "muted"));
  const params = operation.parameters || [];
  if (params.length) {
    const table = element("table");
    table.append(element("thead"));
    table.tHead.append(element("tr"));
    for (const head of ["Parameter", "In", "Type", "Meaning"]) table.tHead.rows[0].append(element("th", head));
    const body = element("tbody");
    for (const p of params) {
      const row = element("tr");
      row.append(element("td", p.name + (p.required ? " *" : "")), element("td", p.in), element("td", schemaText(p.schema)),
        element("td", p.description || ""));
      body.append(row);
    }
    table.append(body);
    card.append(table);
  }
  const json = operation.requestBody && operation.requestBody.content && operation.requestBody.content["application/json"];
  if (json) {
    card.append(element("p", `Body: ${schemaText(json.schema)}`));
    if (json.example) card.append(element("pre", JSON.stringify(json.example, null, 2)));
  }
  const answers = Object.entries(operation.responses || {}).map(([status, r]) => `${status}: ${r.description}`);
  card.append(element("p", answers.join(" · "), "muted"));
  return card;
}

async function start() {
  const response = await fetch("/openapi.json");
  const document_ = await response.json();
  $("intro").textContent = document_.info.description;
  const cards = [];
  for (const [path, item] of Object.entries(document_.paths)) {
    for (const [method, operation] of Object.entries(item)) cards.push(operationCard(path, method, operation));
  }
  $("operations").replaceChildren(...cards);
  $("filter").addEventListener("input", () => {
    const words = $("filter").value.toLowerCase();
    for (const card of cards) card.hidden = words !== "" && !card.textContent.toLowerCase().includes(words);
  });
}

start().catch((error) => {
  $("operations").replaceChildren(element("p", `The document could not be read: ${error.message}`));
});
