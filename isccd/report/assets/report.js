// The isccd duplicate report: filters, sorting, keyboard navigation, keep marks and the plan.
// Everything it shows comes from the JSON in #report-data and is put in the page as text
// (textContent, attributes), never as markup. Groups are rendered a batch at a time as the
// page is scrolled, so that a report of many thousands of groups opens and filters at once.
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const root = document.documentElement;
  const $ = (id) => document.getElementById(id);
  const BATCH = 40;
  const KINDS = { exact: 0, near: 1 };

  // -- text ------------------------------------------------------------------------------------

  // A name as it can be read and not mistaken, as the command line shows it: isccd escapes
  // control characters, bytes that are not UTF-8 and bidirectional overrides, and the page
  // data carries the shown form of each name that has one (a name is shown character by
  // character, so a root's shown form is a prefix of its files').
  const escaped = new Map(Object.entries(data.shown ?? {}));
  const shown = (name) => escaped.get(name) ?? name;

  const size = (n) => {
    if (n === null || n === undefined) return "?";
    if (n < 1024) return `${n} B`;
    let value = n;
    for (const unit of ["KiB", "MiB", "GiB", "TiB"]) {
      value /= 1024;
      if (value < 1024 || unit === "TiB") return `${value.toFixed(1)} ${unit}`;
    }
    return `${n} B`;
  };
  const plural = (n, word) => `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
  const two = (n) => String(n).padStart(2, "0");
  const date = (ns) => {
    const d = new Date(Number(BigInt(ns) / 1000000n));
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ` +
      `${two(d.getHours())}:${two(d.getMinutes())}`;
  };

  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const icon = (name) => {
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    const use = document.createElementNS("http://www.w3.org/2000/svg", "use");
    use.setAttribute("href", `#icon-${name}`);
    svg.append(use);
    return svg;
  };

  // -- the groups, with what the filters and sorting read ----------------------------------

  const groups = data.groups.map((g, i) => ({
    i,
    g,
    text: g.members.flatMap((m) => [m.path, ...m.links]).map(shown).join("\n").toLowerCase(),
    roots: new Set(g.members.map((m) => m.root)),
    distance: Math.max(0, ...g.members.map((m) => m.distance ?? 0)),
    largest: Math.max(0, ...g.members.map((m) => m.size ?? 0)),
    first: g.members[0].path,
  }));
  const keeps = new Map(); // group index -> member index
  let order = [];
  let rendered = 0;
  let cursor = { pos: -1, member: 0 };

  // Sets of names that were joined (union-find).
  const joined = () => {
    const parent = new Map();
    const find = (name) => {
      if (!parent.has(name)) parent.set(name, name);
      while (parent.get(name) !== name) {
        parent.set(name, parent.get(parent.get(name)));
        name = parent.get(name);
      }
      return name;
    };
    return { find, join: (a, b) => parent.set(find(b), find(a)) };
  };
  // The bytes removing a file frees: the blocks it takes on disk, else its size.
  const space = (m) => m.allocated ?? m.size ?? 0;
  // What groups add up to, as isccd counts it (isccd.results.Totals): each file once (a file
  // may be in an exact and a near group); groups that share a file are taken together, and
  // keeping the largest file of each such set frees the space of the others.
  const totalsOf = (list) => {
    const file = joined();
    for (const x of list) {
      for (const m of x.g.members) m.links.forEach((link) => file.join(m.path, link));
    }
    const files = new Map();
    const sharing = joined();
    for (const x of list) {
      const ids = x.g.members.map((m) => file.find(m.path));
      ids.forEach((id, i) => {
        if (!files.has(id)) files.set(id, x.g.members[i]);
        sharing.join(ids[0], id);
      });
    }
    const sets = new Map();
    for (const [id, m] of files) {
      const top = sharing.find(id);
      if (!sets.has(top)) sets.set(top, []);
      sets.get(top).push(m);
    }
    let bytes = 0;
    for (const members of sets.values()) {
      const kept = members.reduce((k, m) => ((m.size ?? 0) > (k.size ?? 0) ? m : k));
      bytes += members.reduce((n, m) => n + space(m), 0) - space(kept);
    }
    return { groups: list.length, files: files.size, bytes };
  };

  // -- controls --------------------------------------------------------------------------------

  const fill = (select, values) => {
    for (const value of [...new Set(values)].sort()) {
      const option = el("option", "", shown(value));
      option.value = value;
      select.append(option);
    }
  };
  fill($("type"), data.groups.map((g) => g.type));
  fill($("unit"), data.groups.map((g) => g.unit));
  fill($("root"), data.groups.flatMap((g) => g.members.map((m) => m.root)));
  const nearest = Math.max(0, ...groups.filter((x) => x.g.kind === "near").map((x) => x.distance));
  $("distance").max = String(nearest);
  $("distance").value = String(nearest);
  $("distance-filter").hidden = !groups.some((x) => x.g.kind === "near");

  $("source").textContent =
    `From ${data.source}, ${new Date(data.generated * 1000).toLocaleString()}.`;
  $("truncated").hidden = !data.truncated;

  const SORTS = {
    reclaimable: (a, b) => b.g.reclaimable - a.g.reclaimable,
    largest: (a, b) => b.largest - a.largest,
    files: (a, b) => b.g.members.length - a.g.members.length,
    distance: (a, b) => a.distance - b.distance,
    path: (a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0),
  };

  function matching() {
    const words = $("search").value.toLowerCase().split(/\s+/).filter(Boolean);
    const kind = $("kind").value;
    const type = $("type").value;
    const unit = $("unit").value;
    const where = $("root").value;
    const distance = Number($("distance").value);
    const list = groups.filter((x) =>
      (kind === "all" || x.g.kind === kind) &&
      (type === "all" || x.g.type === type) &&
      (unit === "all" || x.g.unit === unit) &&
      (where === "all" || x.roots.has(where)) &&
      (x.g.kind === "exact" || x.distance <= distance) &&
      words.every((w) => x.text.includes(w)));
    const sort = SORTS[$("sort").value];
    // Exact and near groups apart: the exact ones first, each part in the chosen order.
    return list.sort((a, b) => KINDS[a.g.kind] - KINDS[b.g.kind] || sort(a, b) || a.i - b.i);
  }

  function showTotals() {
    const all = totalsOf(groups);
    const now = totalsOf(order);
    const line = [
      el("b", "", plural(all.groups, "group")), " \u00b7 ",
      el("b", "", plural(all.files, "file")), " \u00b7 ",
      el("b", "", size(all.bytes)), " reclaimable",
    ];
    if (order.length !== groups.length) {
      line.push(` \u00b7 shown: ${plural(now.groups, "group")}, ${plural(now.files, "file")}, ` +
        `${size(now.bytes)}`);
    }
    $("totals").replaceChildren(...line);
    root.dataset.matched = String(order.length);
    root.dataset.groups = String(all.groups);
    root.dataset.files = String(all.files);
    root.dataset.reclaimable = String(all.bytes);
  }

  // -- rendering -------------------------------------------------------------------------------

  function relation(g, m) {
    if (g.kind === "exact") return "identical bytes";
    if (m.centre) return `centre: the others are near it by ${g.unit}`;
    if (m.distance === null || m.distance === undefined) return `near by ${g.unit}`;
    return `distance ${m.distance} by ${m.unit} to the centre`;
  }

  function preview(m) {
    const box = el("div", "thumb");
    if (m.preview.kind === "image") {
      const img = el("img");
      img.alt = "";
      img.decoding = "async";
      img.src = data.thumbs[m.preview.thumb];
      box.append(img);
    } else if (m.preview.kind === "text") {
      box.append(el("pre", "", m.preview.text));
    } else {
      box.append(icon(m.stat ? m.type || "data" : "missing"));
    }
    return box;
  }

  function memberCard(x, mi) {
    const m = x.g.members[mi];
    const card = el("article", "member");
    card.dataset.member = String(mi);
    card.append(preview(m));
    const label = el("label", "keep");
    const box = el("input");
    box.type = "checkbox";
    box.checked = keeps.get(x.i) === mi;
    box.disabled = !m.stat;
    box.addEventListener("change", () => setKeep(x.i, mi, box.checked));
    label.append(box, el("span", "", "keep"));
    card.classList.toggle("kept", box.checked);
    // Inside its root, a path is shown from there; the whole of it is the tooltip.
    const inRoot = m.path.startsWith(m.root.endsWith("/") ? m.root : m.root + "/");
    const name = inRoot
      ? shown(m.path).slice(shown(m.root).length).replace(/^\//, "")
      : shown(m.path);
    const cut = name.lastIndexOf("/") + 1;
    const path = el("div", "path");
    path.title = shown(m.path);
    path.append(el("span", "dir", name.slice(0, cut)), el("span", "name", name.slice(cut)));
    const facts = [size(m.stat ? Number(m.stat.size) : m.size)];
    // A sparse file holds fewer bytes on disk than its size: what removing it frees.
    if (m.allocated !== null && m.allocated !== undefined && m.allocated < (m.size ?? 0)) {
      facts.push(`${size(m.allocated)} on disk`);
    }
    if (m.stat) facts.push(date(m.stat.mtime_ns));
    if (m.mediatype) facts.push(m.mediatype);
    card.append(label, path, el("div", "facts", facts.join(" \u00b7 ")),
      el("div", "relation", relation(x.g, m)));
    for (const link of m.links) card.append(el("div", "links", `= ${shown(link)} (hardlink)`));
    if (m.note) card.append(el("div", "note", m.note));
    return card;
  }

  function groupCard(x) {
    const g = x.g;
    const card = el("section", "group");
    card.dataset.group = String(x.i);
    card.tabIndex = -1;
    const head = el("header");
    head.append(
      el("span", `badge ${g.kind}`, g.kind === "exact" ? "exact" : `near \u00b7 ${g.unit}`),
      el("span", "", `${size(g.reclaimable)} reclaimable`),
      el("span", "muted", plural(g.members.length, "file")),
    );
    if (g.kind === "near") head.append(el("span", "muted", `threshold ${g.threshold} bits`));
    const members = el("div", "members");
    g.members.forEach((_, mi) => members.append(memberCard(x, mi)));
    card.append(head, members);
    return card;
  }

  function sectionTitle(kind, from) {
    const part = order.slice(from).filter((x) => x.g.kind === kind);
    const t = totalsOf(part);
    const h = el("h2", "section", kind === "exact" ? "Exact duplicates " : "Near duplicates ");
    h.append(el("span", "sub",
      `${plural(t.groups, "group")}, ${plural(t.files, "file")}, ${size(t.bytes)} reclaimable`));
    return h;
  }

  function renderMore(count) {
    const main = $("groups");
    const end = Math.min(order.length, rendered + count);
    const batch = document.createDocumentFragment();
    for (let pos = rendered; pos < end; pos++) {
      const x = order[pos];
      if (pos === 0 || order[pos - 1].g.kind !== x.g.kind) batch.append(sectionTitle(x.g.kind, pos));
      batch.append(groupCard(x));
    }
    main.append(batch);
    rendered = end;
    root.dataset.rendered = String(rendered);
  }

  function groupNode(pos) {
    return pos >= 0 && pos < rendered
      ? $("groups").querySelector(`section.group[data-group="${order[pos].i}"]`)
      : null;
  }

  function apply() {
    const current = cursor.pos >= 0 && cursor.pos < order.length ? order[cursor.pos].i : -1;
    order = matching();
    rendered = 0;
    $("groups").replaceChildren();
    if (!order.length) {
      $("groups").append(el("p", "empty",
        groups.length ? "No group matches the filters." : "No duplicates."));
    }
    renderMore(BATCH);
    const pos = order.findIndex((x) => x.i === current);
    cursor = { pos, member: pos >= 0 ? cursor.member : 0 };
    if (pos >= 0) focus(pos, cursor.member, false);
    showTotals();
    watchMore();
  }

  // More groups as the end of the list comes near.
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && rendered < order.length) {
      renderMore(BATCH);
      watchMore();
    }
  }, { rootMargin: "1200px 0px" });
  function watchMore() {
    // Observing again reports the current state, so a screen that is still not full fills.
    observer.unobserve($("more"));
    observer.observe($("more"));
  }

  // -- duplicate folders -----------------------------------------------------------------------

  // A share as a whole percentage, never rounded up to 100 unless it is (as the command line
  // shows it; the small margin keeps 0.58 from showing as 57).
  const percent = (share) => (share >= 1 ? 100 : Math.min(99, Math.floor(share * 100 + 1e-9)));

  function folderNames(list, count, sign, cls) {
    const items = list.map((name) => el("li", cls, `${sign} ${shown(name)}`));
    if (count > list.length) {
      items.push(el("li", `${cls} more-names`, `${sign} ${(count - list.length).toLocaleString("en")} more`));
    }
    return items;
  }

  function folderCard(g, m) {
    const item = el("li", m.centre ? "folder centre" : "folder");
    const path = el("div", "path", shown(m.path) + "/");
    path.title = shown(m.path);
    const facts = [plural(m.files, "file"), size(m.size)];
    if (m.centre) facts.push("centre");
    else if (g.kind === "near") facts.push(`${percent(m.share)}% shared with the centre`);
    item.append(path, el("div", "facts", facts.join(" \u00b7 ")));
    const names = [
      ...folderNames(m.unmatched, m.unmatched_count, "+", "unmatched"),
      ...folderNames(m.missing, m.missing_count, "-", "missing"),
    ];
    if (names.length) {
      const list = el("ul", "names");
      list.append(...names);
      item.append(list);
    }
    return item;
  }

  function renderFolders() {
    const folders = data.folders ?? { groups: [], error: "", truncated: false };
    const box = $("folder-groups");
    $("folders-truncated").hidden = !folders.truncated;
    if (folders.error) {
      $("folders-note").hidden = false;
      $("folders-note").textContent = `Duplicate folders could not be listed: ${folders.error}.`;
      $("folders-totals").textContent = "";
    } else if (!folders.groups.length) {
      box.append(el("p", "empty", "No duplicate folders."));
    } else {
      $("folders-totals").textContent = `${plural(folders.groups.length, "group")}, ` +
        `${plural(folders.folders, "folder")}, ${size(folders.reclaimable)} reclaimable`;
    }
    folders.groups.forEach((g, i) => {
      const card = el("section", "dirgroup");
      card.dataset.dirgroup = String(i);
      const head = el("header");
      head.append(el("span", `badge ${g.kind}`, g.kind === "exact" ? "exact" : "near"));
      if (g.kind === "exact") head.append(el("span", "", `${size(g.reclaimable)} reclaimable`));
      head.append(el("span", "muted", plural(g.members.length, "folder")));
      const list = el("ol", "folder-list");
      list.append(...g.members.map((m) => folderCard(g, m)));
      card.append(head, list);
      box.append(card);
    });
    root.dataset.folderGroups = String(folders.groups.length);
  }

  // -- keep marks and the plan -----------------------------------------------------------------

  function setKeep(gi, mi, on) {
    if (on) keeps.set(gi, mi);
    else if (keeps.get(gi) === mi) keeps.delete(gi);
    const node = $("groups").querySelector(`section.group[data-group="${gi}"]`);
    if (node) {
      for (const card of node.querySelectorAll("article.member")) {
        const kept = keeps.get(gi) === Number(card.dataset.member);
        card.classList.toggle("kept", kept);
        card.querySelector("input[type=checkbox]").checked = kept;
      }
    }
    $("save").textContent = keeps.size ? `Save plan (${plural(keeps.size, "group")})` : "Save plan";
    root.dataset.kept = String(keeps.size);
  }

  // Integers that must stay exact (an mtime in nanoseconds is past 2**53) are carried as
  // strings and written into the JSON as numbers, digit for digit.
  const INT = "\u0000int:";
  const exactInt = (digits) => INT + digits;

  function plan() {
    const out = [];
    // Each name in the plan, and whether every group so far keeps it: a file may be in two
    // groups only as the file both keep (isccd dedupe acts on no file another group keeps).
    const seen = new Map();
    const left = [];
    for (const [gi, ki] of [...keeps].sort((a, b) => a[0] - b[0])) {
      const g = data.groups[gi];
      const present = g.members.filter((m) => m.stat);
      const label = `the group of ${shown(g.members[ki].path)}`;
      if (!g.members[ki].stat) {
        left.push(`${label}: the file to keep is not here (gone, or on another host)`);
        continue;
      }
      if (present.length < 2) {
        left.push(`${label}: its other files are not there any more`);
        continue;
      }
      const kept = new Set([g.members[ki].path, ...g.members[ki].links]);
      const names = present.flatMap((m) => [m.path, ...m.links]);
      const clash = names.find((p) => seen.has(p) && !(seen.get(p) && kept.has(p)));
      if (clash !== undefined) {
        left.push(`${label}: ${shown(clash)} is in an earlier group of the plan and not kept in both`);
        continue;
      }
      names.forEach((p) => seen.set(p, kept.has(p)));
      const members = present.map((m) => {
        const member = { path: m.path };
        if (m.links.length) member.links = m.links;
        Object.assign(member, {
          root: m.root,
          device: exactInt(m.stat.device),
          inode: exactInt(m.stat.inode),
          size: exactInt(m.stat.size),
          mtime_ns: exactInt(m.stat.mtime_ns),
        });
        if (m.stat.allocated !== null) member.allocated = exactInt(m.stat.allocated);
        if (g.kind === "exact" && m.instance) member.instance = m.instance;
        // A near member is moved only when its code shows it near the file kept.
        if (g.kind === "near" && m.code) member.code = m.code;
        if (g.kind === "near" && m.centre) member.centre = true;
        member.keep = m === g.members[ki];
        return member;
      });
      const group = { kind: g.kind };
      if (g.kind === "near") Object.assign(group, { unit: g.unit, threshold: g.threshold });
      group.members = members;
      out.push(group);
    }
    const doc = {
      format: "isccd-dedupe-plan",
      version: 1,
      created: Date.now() / 1000,
      source: `isccd report (${data.source})`,
      groups: out,
    };
    const text = JSON.stringify(doc, null, 2).replace(/"\\u0000int:(\d+)"/g, "$1") + "\n";
    return { text, groups: out.length, left };
  }

  function save() {
    if (!keeps.size) {
      $("status").textContent = "Mark the file to keep in at least one group first.";
      return;
    }
    const made = plan();
    if (made.groups) {
      const url = URL.createObjectURL(new Blob([made.text], { type: "application/json" }));
      const link = el("a");
      link.href = url;
      link.download = "isccd-plan.json";
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    }
    let status = `Saved isccd-plan.json: ${plural(made.groups, "group")}.`;
    if (!made.groups) status = "Nothing saved:";
    if (made.left.length) status += ` Left out ${made.left.join("; ")}.`;
    $("status").textContent = status;
  }

  // -- keyboard --------------------------------------------------------------------------------

  function focus(pos, member, scroll = true) {
    for (const node of $("groups").querySelectorAll(".current")) node.classList.remove("current");
    if (pos < 0 || pos >= order.length) return;
    while (pos >= rendered) renderMore(BATCH);
    const node = groupNode(pos);
    const count = order[pos].g.members.length;
    cursor = { pos, member: Math.max(0, Math.min(member, count - 1)) };
    node.classList.add("current");
    node.querySelectorAll("article.member")[cursor.member].classList.add("current");
    if (scroll) node.scrollIntoView({ block: "nearest" });
    root.dataset.cursor = String(order[pos].i);
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    // Typing, choosing and sliding keep their keys; a checkbox or button keeps its space.
    const typing = t instanceof HTMLSelectElement ||
      (t instanceof HTMLInputElement && t.type !== "checkbox");
    if (typing) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.key === " " && (t instanceof HTMLInputElement || t instanceof HTMLButtonElement)) return;
    const moves = {
      j: [1, 0], ArrowDown: [1, 0], k: [-1, 0], ArrowUp: [-1, 0],
      l: [0, 1], ArrowRight: [0, 1], h: [0, -1], ArrowLeft: [0, -1],
    };
    if (e.key === "/") {
      e.preventDefault();
      $("search").focus();
    } else if (e.key in moves) {
      e.preventDefault();
      const [down, across] = moves[e.key];
      if (cursor.pos < 0) focus(0, 0);
      else if (down) focus(Math.max(0, Math.min(order.length - 1, cursor.pos + down)), 0);
      else focus(cursor.pos, cursor.member + across);
    } else if (e.key === " ") {
      e.preventDefault();
      if (cursor.pos < 0) return focus(0, 0);
      const x = order[cursor.pos];
      if (x.g.members[cursor.member].stat) setKeep(x.i, cursor.member, keeps.get(x.i) !== cursor.member);
    }
  });

  $("groups").addEventListener("click", (e) => {
    const card = e.target.closest("section.group");
    if (!card) return;
    const pos = order.findIndex((x) => x.i === Number(card.dataset.group));
    const member = e.target.closest("article.member");
    focus(pos, member ? Number(member.dataset.member) : 0, false);
  });

  function showDistance() {
    $("distance-value").textContent = plural(Number($("distance").value), "bit");
  }

  for (const id of ["search", "kind", "type", "unit", "root", "distance", "sort"]) {
    $(id).addEventListener("input", () => {
      showDistance();
      apply();
    });
  }
  $("save").addEventListener("click", save);
  $("clear").addEventListener("click", () => {
    for (const gi of [...keeps.keys()]) setKeep(gi, keeps.get(gi), false);
    $("status").textContent = "";
  });

  showDistance();
  renderFolders();
  apply();
  root.dataset.ready = "1";
  // After the first frame is painted: the time to first render, for the benchmark.
  requestAnimationFrame(() => setTimeout(() => {
    root.dataset.firstRender = performance.now().toFixed(1);
  }, 0));
})();
