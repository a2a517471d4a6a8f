// harness view: the page is complete without this script; it adds an index of the sessions and
// turns, a filter, fold controls and j/k navigation. It only ever sets textContent, never HTML.
(function () {
  "use strict";
  var doc = document;
  function el(name, attrs, text) {
    var node = doc.createElement(name);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // The index: per run, per session, one link per turn (marked when a tool call failed).
  var index = doc.getElementById("index");
  var links = [];
  var linkOf = {};
  doc.querySelectorAll("section.run").forEach(function (run) {
    var runHead = run.querySelector("h2");
    if (doc.querySelectorAll("section.run").length > 1 && runHead) {
      index.appendChild(el("h5", { "class": "run-title" }, runHead.textContent));
    }
    run.querySelectorAll("section.segment").forEach(function (segment) {
      index.appendChild(el("h5", { "class": "session-title" }, segment.getAttribute("data-title")));
      var list = el("ol");
      // A collapsed group of turns is one entry; the turns inside it are not listed.
      segment.querySelectorAll("article.turn, details.group").forEach(function (entry) {
        if (entry.parentElement.closest("details.group")) { return; }
        var link = el("a", { href: "#" + entry.id }, entry.getAttribute("data-label"));
        if (entry.getAttribute("data-errors") !== "0") { link.className = "err"; }
        link.setAttribute("data-target", entry.id);
        linkOf[entry.id] = link;
        if (entry.tagName === "DETAILS") {
          link.addEventListener("click", function () { entry.open = true; });
        }
        var item = el("li");
        item.appendChild(link);
        list.appendChild(item);
        links.push(link);
      });
      index.appendChild(list);
    });
    var halt = run.querySelector("section.halt");
    if (halt) {
      halt.id = run.id + "-halt";
      index.appendChild(el("a", { href: "#" + halt.id, "class": "halt-link" }, "halt"));
    }
  });
  index.hidden = false;

  // Controls: show only what went wrong; open or fold every long block.
  var controls = doc.getElementById("controls");
  var trouble = el("label");
  var box = el("input", { type: "checkbox", id: "only-trouble" });
  box.addEventListener("change", function () { doc.body.classList.toggle("only-trouble", box.checked); });
  trouble.appendChild(box);
  trouble.appendChild(doc.createTextNode("only turns with errors, and warnings"));
  function foldAll(open) {
    return function () { doc.querySelectorAll("details.fold").forEach(function (d) { d.open = open; }); };
  }
  var expand = el("button", { type: "button", id: "expand-all" }, "expand all");
  expand.addEventListener("click", foldAll(true));
  var collapse = el("button", { type: "button", id: "collapse-all" }, "collapse all");
  collapse.addEventListener("click", foldAll(false));
  controls.appendChild(trouble);
  controls.appendChild(expand);
  controls.appendChild(collapse);
  controls.appendChild(el("span", { "class": "hint" }, "j / k: next / previous turn"));
  controls.hidden = false;

  // j / k move between turns; the index follows what is on screen.
  var turns = Array.prototype.slice.call(doc.querySelectorAll("article.turn"));
  var current = -1;
  function mark(i) {
    var turn = turns[i];
    var group = turn && turn.closest("details.group");
    var target = turn && (linkOf[turn.id] || (group && linkOf[group.id]));
    links.forEach(function (link) { link.classList.toggle("current", link === target); });
    current = i;
  }
  doc.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || /input|textarea/i.test(event.target.tagName)) { return; }
    var step = event.key === "j" ? 1 : event.key === "k" ? -1 : 0;
    if (!step || !turns.length) { return; }
    var next = Math.min(turns.length - 1, Math.max(0, current + step));
    var group = turns[next].closest("details.group");
    if (group) { group.open = true; }
    turns[next].scrollIntoView({ block: "start" });
    mark(next);
  });
  if ("IntersectionObserver" in window) {
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { mark(turns.indexOf(entry.target)); }
      });
    }, { rootMargin: "0px 0px -70% 0px" });
    turns.forEach(function (turn) { observer.observe(turn); });
  }
  doc.documentElement.setAttribute("data-viewer", "ready");
})();
